// no_deletes: block tools that delete data, by name (host.config.forbidden, and unless
// host.config.by_name is false, names such as delete_file, remove, drop_table) and by the
// command of a shell tool (host.config.shell_tools).
//
// A pattern guard is a speed bump, not a wall: shell is a full language (eval, base64, aliases,
// scripts written to disk, variables). Where it matters, allow only listed commands instead
// (see allow_commands). Commands are normalised before matching, the same way as no_deletes.py:
//   1. escapes \uXXXX and \xHH are decoded;
//   2. compatibility characters are folded: fullwidth ASCII (U+FF01-FF5E) to ASCII, dashes and
//      minus signs to "-", unusual spaces to " "; zero-width, bidi controls and soft hyphens
//      are dropped;
//   3. the text is lower-cased, and quotes (' " `) and backslashes are removed, so 'rm', "r""m"
//      and \rm all read rm; a backtick also counts as a command separator.

const DROPPED = "\u00AD\u180E\u200B\u200C\u200D\u200E\u200F\u202A\u202B\u202C\u202D\u202E" +
  "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\uFEFF";
const DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\uFE58\uFE63";
const SPACES = "\u00A0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A" +
  "\u202F\u205F\u3000";
const HEX = "0123456789abcdefABCDEF";

// Commands that delete, found as words: what lies between separators, after its last "/"
// (so /bin/rm is rm, while --rm and /srv/rm/ are not).
const COMMANDS = ["rm", "unlink", "rmdir", "shred", "srm", "wipe", "wipefs", "truncate", "mkfs"];
const SEPARATORS = ["\t", "\n", "\r", ";", "&", "|", "(", ")", "{", "}", "$", "!", "=", ":"];

// [words, pattern]: a pattern runs only on text holding one of its words (a cheap check first).
const DESTRUCTIVE = [
  [["rsync"], "\\brsync\\b.*\\s--(delete|remove-source-files)"],
  [["find"], "\\bfind\\b.*\\s-delete\\b"],
  [["dd"], "\\bdd\\b.*\\bof="],
  [["git"], "\\bgit\\s+(.*\\s)?(clean|reset\\s+(.*\\s)?--hard)\\b"],
  [["mv"], "\\bmv\\b.*\\s/dev/null\\b"],
  [["cp"], "\\bcp\\s+/dev/null\\s"],
  [["rmtree", "removedirs", "sync"], "\\b(rmtree|removedirs|unlinksync|rmsync|rmdirsync)\\b"],
  [["os."], "\\bos\\.(remove|unlink|rmdir)\\b"],
  [[".unlink", ".rmdir"], "\\.(unlink|rmdir)\\s*\\("],
  [["drop"], "\\bdrop\\s+(table|database|schema|index|view)\\b"],
  [["delete"], "\\bdelete\\s+from\\b"]
];
// A tool whose name says it deletes, once split into words: delete_file, DeleteFile, remove.
const NAME_WORDS = ["del", "remove", "rm", "drop", "destroy", "erase", "purge", "wipe",
  "truncate", "unlink", "shred"];
const DELETING_NAME = "(^|_)(delete|del|remove|rm|drop|destroy|erase|purge|wipe|truncate|unlink|rmdir|shred)(_|$)";

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
    var part = parts[i];
    var size = part.charAt(0) === "u" ? 4 : (part.charAt(0) === "x" ? 2 : 0);
    var digits = part.substr(1, size);
    if (size > 0 && digits.length === size && isHex(digits)) {
      out.push(String.fromCharCode(parseInt(digits, 16)) + part.substr(1 + size));
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

function shellText(command) {
  var text = fold(command).toLowerCase();
  text = text.split("`").join(";").split("'").join("").split("\"").join("").split("\\").join("");
  return text;
}

// Redirections that truncate a file: any > left once >>, N>&M and >/dev/null are taken out.
function withoutSafeRedirections(text) {
  var rest = text.split(">>").join(" ").split(">&").join(" ");
  return rest.split(">/dev/null").join(" ").split("> /dev/null").join(" ");
}

function toolWords(name) {
  var text = fold(name);
  if (text.toLowerCase() !== text) {
    var out = [];
    for (var i = 0; i < text.length; i++) {
      var ch = text.charAt(i);
      var prev = i > 0 ? text.charAt(i - 1) : "";
      if (ch >= "A" && ch <= "Z" && prev >= "a" && prev <= "z") { out.push("_"); }
      out.push(ch);
    }
    text = out.join("").toLowerCase();
  }
  return text.split("-").join("_").split(".").join("_").split(" ").join("_");
}

// Cheap substring checks first: the patterns run only on text holding one of these words.
function mentions(text, words) {
  for (var i = 0; i < words.length; i++) {
    if (text.indexOf(words[i]) >= 0) { return true; }
  }
  return false;
}

function deletingName(tool, forbidden, host) {
  var name = toolWords(tool);
  if (forbidden.map(toolWords).indexOf(name) >= 0) { return true; }
  return host.config.by_name !== false && mentions(name, NAME_WORDS) &&
    host.match(DELETING_NAME, name);
}

function runsDeletingCommand(text) {
  for (var i = 0; i < SEPARATORS.length; i++) {
    text = text.split(SEPARATORS[i]).join(" ");
  }
  var words = text.split(" ");
  for (var j = 0; j < words.length; j++) {
    var word = words[j].substr(words[j].lastIndexOf("/") + 1);
    if (COMMANDS.indexOf(word) >= 0 || word.substr(0, 5) === "mkfs.") { return true; }
  }
  return false;
}

function commandOf(input) {
  var command = input.command !== undefined ? input.command : input.cmd;
  if (Array.isArray(command)) {
    return command.map(function (part) { return String(part); }).join(" ");
  }
  return typeof command === "string" ? command : null;
}

function on_tool_call(event, host) {
  var forbidden = host.config.forbidden || [];
  if (forbidden.indexOf(event.name) >= 0 || deletingName(event.name, forbidden, host)) {
    return { block: "the tool " + event.name + " deletes data and is not allowed here" };
  }
  var shells = host.config.shell_tools || ["shell"];
  var command = commandOf(event.input);
  if (shells.indexOf(event.name) < 0 || command === null) {
    return null;
  }
  var text = withoutSafeRedirections(shellText(command));
  var found = text.indexOf(">") >= 0 || runsDeletingCommand(text);
  for (var i = 0; i < DESTRUCTIVE.length && !found; i++) {
    found = mentions(text, DESTRUCTIVE[i][0]) && host.match(DESTRUCTIVE[i][1], text);
  }
  if (!found) {
    return null;
  }
  host.log("destructive command refused: " + command);
  return { block: "the command deletes data and is not allowed here: " + command };
}
