// redact_secrets: hide API keys, tokens, private keys, passwords, IBANs and card numbers in
// answers (before_assistant_message) and in tool results (tool_result). host.config.patterns
// adds more.
//
// Each string is first normalised, the same way as redact_secrets.py:
//   1. escapes \uXXXX and \xHH are decoded (a JSON-escaped "sk\u002dproj-..." reads sk-proj-);
//      \n, \r and \t are marked as breaks between words (in JSON written as text, a key at
//      the start of a line follows the letter n, and would not start a word), and are put
//      back as they were written;
//   2. compatibility characters are folded: fullwidth ASCII (U+FF01-FF5E) to ASCII, dashes and
//      minus signs to "-", unusual spaces to " "; zero-width, bidi controls and soft hyphens
//      are dropped.
// A string that needs no folding is redacted as it is. A string that does, and that holds a
// secret, is returned folded with the secrets replaced (the hiding characters go with them);
// one that holds no secret is returned unchanged. Keys of objects are redacted like strings
// (two keys redacted alike stay apart: "[REDACTED]", "[REDACTED] 2").

const DIGITS = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
// [words, pattern]: a pattern runs only on a string whose lower-cased text holds one of
// its words (a cheap check: the pattern engine costs microseconds per character).
const SECRETS = [
  [["sk-"], "\\bsk-[A-Za-z0-9_-]{16,}"],  // OpenAI-style keys (sk-proj-...)
  [["k_live_", "k_test_"], "\\b[rsp]k_(live|test)_[A-Za-z0-9]{10,}"],  // Stripe keys
  [["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], "\\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}"],  // GitHub tokens
  [["github_pat_"], "\\bgithub_pat_[A-Za-z0-9_]{20,}"],  // GitHub fine-grained tokens
  [["xox"], "\\bxox[abposr]-[A-Za-z0-9-]{10,}"],  // Slack tokens
  [["aiza"], "\\bAIza[0-9A-Za-z_-]{35}"],  // Google API keys
  [["akia", "asia"], "\\b(AKIA|ASIA)[0-9A-Z]{16}\\b"],  // AWS access key ids
  [["secret"], "(?i)\\baws_?secret_?(access_?)?key\\b\\s*[:=]\\s*[A-Za-z0-9/+=]{40}"],  // AWS secret keys
  [["eyj"], "\\beyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}"],  // JWTs
  [["private key"], "-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*-----END [A-Z ]*PRIVATE KEY-----"],
  [["bearer"], "(?i)\\bbearer\\s+[A-Za-z0-9._~+/=-]{12,}"],  // Authorization: Bearer ...
  [["pass", "pwd"], "(?i)\\b(password|passwd|pwd)\\s*[:=]\\s*[^\\s,;&\"'\\[]{3,}"],  // password=... pairs
  [DIGITS, "\\b[A-Z]{2}\\d{2} ?[A-Z0-9]{4} ?\\d{4} ?\\d{4}( ?[A-Z0-9]{4}){0,4}( ?[A-Z0-9]{1,3})?\\b"],  // IBAN
  [DIGITS, "\\b\\d{4}([ .-]?\\d{4}){3}\\b"],  // cards, 16 digits
  [DIGITS, "\\b3[47]\\d{2}[ .-]?\\d{6}[ .-]?\\d{5}\\b"]  // cards, 15 digits (Amex)
];
const DROPPED = "\u00AD\u180E\u200B\u200C\u200D\u200E\u200F\u202A\u202B\u202C\u202D\u202E" +
  "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\uFEFF";
const DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\uFE58\uFE63";
const SPACES = "\u00A0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A" +
  "\u202F\u205F\u3000";
const HEX = "0123456789abcdefABCDEF";
const SHORT = { n: "\u0001", r: "\u0002", t: "\u0003" };  // a mark no word goes on through

function isHex(text) {
  for (var i = 0; i < text.length; i++) {
    if (HEX.indexOf(text.charAt(i)) < 0) { return false; }
  }
  return text.length > 0;
}

function decodeEscapes(text) {
  if (text.indexOf("\\") < 0) { return text; }
  var parts = text.split("\\");
  var out = [parts[0]];
  for (var i = 1; i < parts.length; i++) {
    var part = parts[i], first = part.charAt(0);
    var size = first === "u" ? 4 : (first === "x" ? 2 : 0);
    var digits = part.substr(1, size);
    if (size > 0 && digits.length === size && isHex(digits)) {
      out.push(String.fromCharCode(parseInt(digits, 16)) + part.substr(1 + size));
    } else if (SHORT.hasOwnProperty(first)) {
      out.push("\\" + SHORT[first] + part.substr(1));
    } else {
      out.push("\\" + part);
    }
  }
  return out.join("");
}

function fold(text) {
  text = decodeEscapes(text);
  if (!/[^\x00-\x7F]/.test(text)) { return text; }
  var out = [];
  for (var i = 0; i < text.length; i++) {
    var ch = text.charAt(i);
    var code = text.charCodeAt(i);
    if (code < 128) { out.push(ch); }
    else if (DROPPED.indexOf(ch) >= 0) { continue; }
    else if (DASHES.indexOf(ch) >= 0) { out.push("-"); }
    else if (SPACES.indexOf(ch) >= 0) { out.push(" "); }
    else if (code >= 0xFF01 && code <= 0xFF5E) { out.push(String.fromCharCode(code - 0xFEE0)); }
    else { out.push(ch); }
  }
  return out.join("");
}

function mentions(text, words) {
  for (var i = 0; i < words.length; i++) {
    if (text.indexOf(words[i]) >= 0) { return true; }
  }
  return false;
}

function patterns(text, host) {
  var lower = text.toLowerCase();
  var found = SECRETS.filter(function (s) { return mentions(lower, s[0]); });
  return found.map(function (s) { return s[1]; }).concat(host.config.patterns || []);
}

function scrub(text, host) {
  var replacement = host.config.replacement || "[REDACTED]";
  var folded = fold(text);
  var active = patterns(folded, host);
  if (active.length === 0) { return text; }
  var redacted = host.redact(folded, active, replacement);
  return redacted === folded ? text : unmarked(redacted);
}

function unmarked(text) {
  Object.keys(SHORT).forEach(function (letter) {
    text = text.split("\\" + SHORT[letter]).join("\\" + letter);
  });
  return text;
}

// keys: each key scrubbed so far (rows of a result repeat theirs), a Map of key to its text.
function clean(value, host, keys) {
  if (typeof value === "string") {
    return scrub(value, host);
  }
  if (Array.isArray(value)) {
    return value.map(function (item) { return clean(item, host, keys); });
  }
  if (value !== null && typeof value === "object") {
    var out = Object.create(null);  // a key may be "toString" or "__proto__"
    Object.keys(value).forEach(function (k) {
      if (!keys.has(k)) { keys.set(k, scrub(k, host)); }
      out[unique(keys.get(k), out)] = clean(value[k], host, keys);
    });
    return out;
  }
  return value;
}

function unique(key, taken) {
  var name = key;
  for (var n = 2; Object.prototype.hasOwnProperty.call(taken, name); n++) { name = key + " " + n; }
  return name;
}

function on_before_assistant_message(event, host) {
  var answer = clean(event.answer, host, new Map());
  return answer === event.answer ? null : { answer: answer };
}

// A tool's structured data (event.data) goes on only with a result no hook replaced: a
// secret in it is dropped by replacing the result, with a line saying so if nothing else
// changed.
function on_tool_result(event, host) {
  var result = clean(event.result, host, new Map());
  var data = event.data === undefined ? null : event.data;
  var same = JSON.stringify(result) === JSON.stringify(event.result);
  if (same && JSON.stringify(clean(data, host, new Map())) !== JSON.stringify(data)) {
    result = (typeof result === "string" ? result : JSON.stringify(result)) +
      "\n[structured data withheld: it held a secret]";
    same = false;
  }
  if (same) {
    return null;
  }
  host.emit({ type: "status", data: { description: "secrets redacted from " + event.name } });
  return { result: result };
}
