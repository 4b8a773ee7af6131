# no_deletes: block tools that delete data, by name (host.config["forbidden"], and unless
# host.config["by_name"] is false, names such as delete_file, remove, drop_table) and by the
# command of a shell tool (host.config["shell_tools"]).
#
# A pattern guard is a speed bump, not a wall: shell is a full language (eval, base64, aliases,
# scripts written to disk, variables). Where it matters, allow only listed commands instead
# (see allow_commands). Commands are normalised before matching, the same way as no_deletes.js:
#   1. escapes \uXXXX and \xHH are decoded;
#   2. compatibility characters are folded: fullwidth ASCII (U+FF01-FF5E) to ASCII, dashes and
#      minus signs to "-", unusual spaces to " "; zero-width, bidi controls and soft hyphens
#      are dropped;
#   3. the text is lower-cased, and quotes (' " `) and backslashes are removed, so 'rm', "r""m"
#      and \rm all read rm; a backtick also counts as a command separator.

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

# Where a command word may start and end (so --rm or /tmp/rm/x are not the rm command).
BEFORE = "(^|[\\s;&|(){}$/!=:])"
AFTER = "(\\s|$|[;&|(){}])"
DESTRUCTIVE = [
    BEFORE + "(rm|unlink|rmdir|shred|srm|wipe|wipefs|truncate|mkfs(\\.\\w+)?)" + AFTER,
    "\\brsync\\b.*\\s--(delete|remove-source-files)",
    "\\bfind\\b.*\\s-delete\\b",
    "\\bdd\\b.*\\bof=",
    "\\bgit\\s+(.*\\s)?(clean|reset\\s+(.*\\s)?--hard)\\b",
    "\\bmv\\b.*\\s/dev/null\\b",
    "\\bcp\\s+/dev/null\\s",
    "\\b(rmtree|removedirs|unlinksync|rmsync|rmdirsync)\\b",
    "\\bos\\.(remove|unlink|rmdir)\\b",
    "\\.(unlink|rmdir)\\s*\\(",
    "\\bdrop\\s+(table|database|schema|index|view)\\b",
    "\\bdelete\\s+from\\b",
]
# A tool whose name says it deletes, once split into words: delete_file, DeleteFile, remove.
DELETING_NAME = (
    "(^|_)(delete|del|remove|rm|drop|destroy|erase|purge|wipe|truncate|unlink|rmdir|shred)(_|$)"
)


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


def shell_text(command):
    text = fold(command).lower()
    return text.replace("`", ";").replace("'", "").replace('"', "").replace("\\", "")


def truncates(text, host):
    """Redirections that truncate a file: any > except >>, N>&M, &>/dev/null and >/dev/null."""
    rest = text.replace(">>", " ").replace(">&", " ")
    rest = rest.replace(">/dev/null", " ").replace("> /dev/null", " ")
    return host.match(">", rest)


def tool_words(name):
    text = fold(name)
    out = []
    for i, ch in enumerate(text):
        prev = text[i - 1] if i > 0 else ""
        if "A" <= ch <= "Z" and "a" <= prev <= "z":
            out.append("_")
        out.append("_" if ch in "-. " else ch)
    return "".join(out).lower()


def command_of(tool_input):
    command = tool_input["command"] if "command" in tool_input else tool_input.get("cmd")
    if isinstance(command, list):
        return " ".join(str(part) for part in command)
    return command if isinstance(command, str) else None


def on_tool_call(event, host):
    forbidden = [tool_words(n) for n in host.config.get("forbidden", [])]
    name = tool_words(event["name"])
    by_name = host.config.get("by_name", True) is not False and host.match(DELETING_NAME, name)
    if name in forbidden or by_name:
        return {"block": "the tool " + event["name"] + " deletes data and is not allowed here"}
    shells = host.config.get("shell_tools", ["shell"])
    command = command_of(event["input"])
    if event["name"] not in shells or command is None:
        return None
    text = shell_text(command)
    found = truncates(text, host)
    for pattern in DESTRUCTIVE:
        if found:
            break
        found = host.match(pattern, text)
    if not found:
        return None
    host.log("destructive command refused: " + command)
    return {"block": "the command deletes data and is not allowed here: " + command}
