// no_deletes: block destructive tools by name (host.config.forbidden) and by arguments,
// e.g. `rm -rf` inside the command of a shell tool (host.config.shell_tools).
var DESTRUCTIVE = [
  "\\brm\\s+(-\\w+\\s+)*-\\w*[rRf]",   // rm -rf, rm -r, rm -f ...
  "\\bfind\\b.*\\s-delete\\b",
  "\\bmkfs(\\.\\w+)?\\b",
  "\\bdd\\s+.*\\bof=/dev/",
  "(?i)\\bdrop\\s+(table|database)\\b",
  "(?i)\\btruncate\\s+table\\b"
];

function on_tool_call(event, host) {
  var forbidden = host.config.forbidden || [];
  if (forbidden.indexOf(event.name) >= 0) {
    return { block: "the tool " + event.name + " deletes data and is not allowed here" };
  }
  var shells = host.config.shell_tools || ["shell"];
  var command = event.input.command;
  if (shells.indexOf(event.name) < 0 || typeof command !== "string") {
    return null;
  }
  for (var i = 0; i < DESTRUCTIVE.length; i++) {
    if (host.match(DESTRUCTIVE[i], command)) {
      host.log("destructive command refused: " + command);
      return { block: "the command deletes data and is not allowed here: " + command };
    }
  }
  return null;
}
