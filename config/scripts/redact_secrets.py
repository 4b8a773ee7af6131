# redact_secrets: hide API keys, tokens, private keys, passwords, IBANs and card numbers in
# answers (before_assistant_message) and in tool results (tool_result). host.config["patterns"]
# adds more.
#
# Each string is first normalised, the same way as redact_secrets.js:
#   1. escapes \uXXXX and \xHH are decoded (a JSON-escaped "sk\u002dproj-..." reads sk-proj-);
#      \n, \r and \t are marked as breaks between words (in JSON written as text, a key at
#      the start of a line follows the letter n, and would not start a word), and are put
#      back as they were written;
#   2. compatibility characters are folded: fullwidth ASCII (U+FF01-FF5E) to ASCII, dashes and
#      minus signs to "-", unusual spaces to " "; zero-width, bidi controls and soft hyphens
#      are dropped.
# A string that needs no folding is redacted as it is. A string that does, and that holds a
# secret, is returned folded with the secrets replaced (the hiding characters go with them);
# one that holds no secret is returned unchanged. Keys of dicts are redacted like strings
# (two keys redacted alike stay apart: "[REDACTED]", "[REDACTED] 2").

DIGITS = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]
# (words, pattern): a pattern runs only on a string whose lower-cased text holds one of
# its words (a cheap check: the pattern engine costs microseconds per character).
SECRETS = [
    (["sk-"], "\\bsk-[A-Za-z0-9_-]{16,}"),  # OpenAI-style keys (sk-proj-...)
    (["k_live_", "k_test_"], "\\b[rsp]k_(live|test)_[A-Za-z0-9]{10,}"),  # Stripe keys
    (
        ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
        "\\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",
    ),  # GitHub tokens
    (["github_pat_"], "\\bgithub_pat_[A-Za-z0-9_]{20,}"),  # GitHub fine-grained tokens
    (["xox"], "\\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    (["aiza"], "\\bAIza[0-9A-Za-z_-]{35}"),  # Google API keys
    (["akia", "asia"], "\\b(AKIA|ASIA)[0-9A-Z]{16}\\b"),  # AWS access key ids
    (
        ["secret"],
        "(?i)\\baws_?secret_?(access_?)?key\\b\\s*[:=]\\s*[A-Za-z0-9/+=]{40}",
    ),  # AWS secret keys
    (["eyj"], "\\beyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}"),  # JWTs
    (["private key"], "-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*-----END [A-Z ]*PRIVATE KEY-----"),
    (["bearer"], "(?i)\\bbearer\\s+[A-Za-z0-9._~+/=-]{12,}"),  # Authorization: Bearer ...
    (
        ["pass", "pwd"],
        "(?i)\\b(password|passwd|pwd)\\s*[:=]\\s*[^\\s,;&\"'\\[]{3,}",
    ),  # password=... pairs
    (
        DIGITS,
        "\\b[A-Z]{2}\\d{2} ?[A-Z0-9]{4} ?\\d{4} ?\\d{4}( ?[A-Z0-9]{4}){0,4}( ?[A-Z0-9]{1,3})?\\b",
    ),  # IBAN
    (DIGITS, "\\b\\d{4}([ .-]?\\d{4}){3}\\b"),  # cards, 16 digits
    (DIGITS, "\\b3[47]\\d{2}[ .-]?\\d{6}[ .-]?\\d{5}\\b"),  # cards, 15 digits (Amex)
]
DROPPED = (
    "\u00ad\u180e\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
)
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63"
SPACES = (
    "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u202f\u205f\u3000"
)
HEX = "0123456789abcdefABCDEF"
SHORT = {"n": "\x01", "r": "\x02", "t": "\x03"}  # a mark no word goes on through


def is_hex(text):
    return len(text) > 0 and all(ch in HEX for ch in text)


def decode_escapes(text):
    if "\\" not in text:
        return text
    parts = text.split("\\")
    out = [parts[0]]
    for part in parts[1:]:
        size = 4 if part[:1] == "u" else (2 if part[:1] == "x" else 0)
        digits = part[1 : 1 + size]
        if size and len(digits) == size and is_hex(digits):
            out.append(chr(int(digits, 16)) + part[1 + size :])
        elif part[:1] in SHORT:
            out.append("\\" + SHORT[part[:1]] + part[1:])
        else:
            out.append("\\" + part)
    return "".join(out)


def fold(text):
    text = decode_escapes(text)
    if text.isascii():
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if code < 128:
            out.append(ch)
        elif ch in DROPPED:
            continue
        elif ch in DASHES:
            out.append("-")
        elif ch in SPACES:
            out.append(" ")
        elif 0xFF01 <= code <= 0xFF5E:
            out.append(chr(code - 0xFEE0))
        else:
            out.append(ch)
    return "".join(out)


def patterns(text, host):
    lower = text.lower()
    found = [pattern for words, pattern in SECRETS if any(w in lower for w in words)]
    return found + host.config.get("patterns", [])


def scrub(text, host):
    replacement = host.config.get("replacement", "[REDACTED]")
    folded = fold(text)
    active = patterns(folded, host)
    if not active:
        return text
    redacted = host.redact(folded, active, replacement)
    return text if redacted == folded else unmarked(redacted)


def unmarked(text):
    for letter, mark in SHORT.items():
        text = text.replace("\\" + mark, "\\" + letter)
    return text


# keys: each key scrubbed so far (rows of a result repeat theirs), key to its text.
def clean(value, host, keys):
    if isinstance(value, str):
        return scrub(value, host)
    if isinstance(value, list):
        return [clean(item, host, keys) for item in value]
    if isinstance(value, dict):
        if all(key_text(k, host, keys) == k for k in value):
            return {k: clean(v, host, keys) for k, v in value.items()}
        out = {}
        for k, v in value.items():
            out[unique(key_text(k, host, keys), out)] = clean(v, host, keys)
        return out
    return value


def key_text(key, host, keys):
    if key not in keys:
        keys[key] = scrub(key, host)
    return keys[key]


def unique(key, taken):
    name, n = key, 2
    while name in taken:
        name, n = key + " " + str(n), n + 1
    return name


def on_before_assistant_message(event, host):
    answer = clean(event["answer"], host, {})
    return None if answer == event["answer"] else {"answer": answer}


# A tool's structured data (event["data"]) goes on only with a result no hook replaced: a
# secret in it is dropped by replacing the result, with a line saying so if nothing else
# changed.
def on_tool_result(event, host):
    result = clean(event["result"], host, {})
    data = event.get("data")
    if clean(data, host, {}) != data and result == event["result"]:
        result = str(result) + "\n[structured data withheld: it held a secret]"
    if result == event["result"]:
        return None
    host.emit({"type": "status", "data": {"description": "secrets redacted from " + event["name"]}})
    return {"result": result}
