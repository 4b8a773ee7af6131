// allow_commands: the robust form of a command guard. A shell tool may run only the commands
// listed in host.config.commands ("ls", "git status", ...); with host.config.tools set, only
// those tools may be called at all. Anything the list cannot judge is refused: command
// substitution ($(...), backticks, <(...)), variables (${...}, $name), redirection (< >),
// backslashes and quotes around the command word. Same decisions as allow_commands.py.

const HIDING = ["`", "$", "<", ">", "\\"];
const SEPARATORS = ["&&", "||", ";", "|", "&", "\n"];

function parts(command) {
  var text = command;
  for (var i = 0; i < SEPARATORS.length; i++) {
    text = text.split(SEPARATORS[i]).join("\u0000");
  }
  return text.split("\u0000").map(function (p) { return p.trim(); });
}

function words(part) {
  return part.split(" ").filter(function (w) { return w.length > 0; });
}

function allowed(part, commands) {
  var have = words(part);
  for (var i = 0; i < commands.length; i++) {
    var want = words(commands[i]);
    var same = want.length > 0 && want.length <= have.length;
    for (var j = 0; same && j < want.length; j++) {
      same = want[j] === have[j];
    }
    if (same) { return true; }
  }
  return false;
}

function refusal(command, commands) {
  for (var i = 0; i < HIDING.length; i++) {
    if (command.indexOf(HIDING[i]) >= 0) {
      return "the command uses " + HIDING[i] + ", which this guard cannot judge";
    }
  }
  var list = parts(command);
  for (var k = 0; k < list.length; k++) {
    if (list[k] === "" || !allowed(list[k], commands)) {
      return "only these commands may run: " + commands.join(", ");
    }
  }
  return null;
}

function on_tool_call(event, host) {
  var tools = host.config.tools;
  if (Array.isArray(tools) && tools.indexOf(event.name) < 0) {
    return { block: "the tool " + event.name + " is not on this agent's list" };
  }
  var shells = host.config.shell_tools || ["shell"];
  if (shells.indexOf(event.name) < 0) {
    return null;
  }
  var command = event.input.command;
  if (typeof command !== "string") {
    return { block: "a shell call needs a command string" };
  }
  var reason = refusal(command.split("\t").join(" "), host.config.commands || []);
  return reason === null ? null : { block: reason };
}
