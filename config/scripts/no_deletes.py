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

# Commands that delete, found as words: what lies between separators, after its last "/"
# (so /bin/rm is rm, while --rm and /srv/rm/ are not).
COMMANDS = ["rm", "unlink", "rmdir", "shred", "srm", "wipe", "wipefs", "truncate", "mkfs"]
SEPARATORS = ["\t", "\n", "\r", ";", "&", "|", "(", ")", "{", "}", "$", "!", "=", ":"]

# (words, pattern): a pattern runs only on text holding one of its words (a cheap check first).
DESTRUCTIVE = [
    (["rsync"], "\\brsync\\b.*\\s--(delete|remove-source-files)"),
    (["find"], "\\bfind\\b.*\\s-delete\\b"),
    (["dd"], "\\bdd\\b.*\\bof="),
    (["git"], "\\bgit\\s+(.*\\s)?(clean|reset\\s+(.*\\s)?--hard)\\b"),
    (["mv"], "\\bmv\\b.*\\s/dev/null\\b"),
    (["cp"], "\\bcp\\s+/dev/null\\s"),
    (["rmtree", "removedirs", "sync"], "\\b(rmtree|removedirs|unlinksync|rmsync|rmdirsync)\\b"),
    (["os."], "\\bos\\.(remove|unlink|rmdir)\\b"),
    ([".unlink", ".rmdir"], "\\.(unlink|rmdir)\\s*\\("),
    (["drop"], "\\bdrop\\s+(table|database|schema|index|view)\\b"),
    (["delete"], "\\bdelete\\s+from\\b"),
]
NAME_WORDS = ["del", "remove", "rm", "drop", "destroy", "erase", "purge", "wipe"]
NAME_WORDS += ["truncate", "unlink", "shred"]
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


def without_safe_redirections(text):
    """Redirections that truncate a file: any > left once >>, N>&M and >/dev/null are out."""
    rest = text.replace(">>", " ").replace(">&", " ")
    return rest.replace(">/dev/null", " ").replace("> /dev/null", " ")


def tool_words(name):
    text = fold(name)
    if text.lower() != text:
        out = []
        for i, ch in enumerate(text):
            prev = text[i - 1] if i > 0 else ""
            if "A" <= ch <= "Z" and "a" <= prev <= "z":
                out.append("_")
            out.append(ch)
        text = "".join(out).lower()
    return text.replace("-", "_").replace(".", "_").replace(" ", "_")


def mentions(text, words):
    """Cheap substring checks first: the patterns run only on text holding one of these."""
    return any(word in text for word in words)


def deleting_name(tool, forbidden, host):
    name = tool_words(tool)
    if name in [tool_words(n) for n in forbidden]:
        return True
    by_name = host.config.get("by_name", True) is not False
    return by_name and mentions(name, NAME_WORDS) and host.match(DELETING_NAME, name)


def runs_deleting_command(text):
    for separator in SEPARATORS:
        text = text.replace(separator, " ")
    for word in text.split(" "):
        word = word[word.rfind("/") + 1 :]
        if word in COMMANDS or word[:5] == "mkfs.":
            return True
    return False


def command_of(tool_input):
    command = tool_input["command"] if "command" in tool_input else tool_input.get("cmd")
    if isinstance(command, list):
        return " ".join(str(part) for part in command)
    return command if isinstance(command, str) else None


def on_tool_call(event, host):
    forbidden = host.config.get("forbidden", [])
    if event["name"] in forbidden or deleting_name(event["name"], forbidden, host):
        return {"block": "the tool " + event["name"] + " deletes data and is not allowed here"}
    shells = host.config.get("shell_tools", ["shell"])
    command = command_of(event["input"])
    if event["name"] not in shells or command is None:
        return None
    text = without_safe_redirections(shell_text(command))
    found = ">" in text or runs_deleting_command(text)
    for words, pattern in DESTRUCTIVE:
        if found:
            break
        found = mentions(text, words) and host.match(pattern, text)
    if not found:
        return None
    host.log("destructive command refused: " + command)
    return {"block": "the command deletes data and is not allowed here: " + command}
