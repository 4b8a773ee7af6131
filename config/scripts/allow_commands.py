# allow_commands: the robust form of a command guard. A shell tool may run only the commands
# listed in host.config["commands"] ("ls", "git status", ...); with host.config["tools"] set,
# only those tools may be called at all. Anything the list cannot judge is refused: command
# substitution ($(...), backticks, <(...)), variables (${...}, $name), redirection (< >),
# backslashes and quotes around the command word. Same decisions as allow_commands.js.

HIDING = ["`", "$", "<", ">", "\\"]
SEPARATORS = ["&&", "||", ";", "|", "&", "\n"]


def parts(command):
    text = command
    for separator in SEPARATORS:
        text = text.replace(separator, "\0")
    return [part.strip() for part in text.split("\0")]


def words(part):
    return [w for w in part.split(" ") if w]


def allowed(part, commands):
    have = words(part)
    for entry in commands:
        want = words(entry)
        if want and want == have[: len(want)]:
            return True
    return False


def refusal(command, commands):
    for mark in HIDING:
        if mark in command:
            return "the command uses " + mark + ", which this guard cannot judge"
    for part in parts(command):
        if part == "" or not allowed(part, commands):
            return "only these commands may run: " + ", ".join(commands)
    return None


def on_tool_call(event, host):
    tools = host.config.get("tools")
    if isinstance(tools, list) and event["name"] not in tools:
        return {"block": "the tool " + event["name"] + " is not on this agent's list"}
    if event["name"] not in host.config.get("shell_tools", ["shell"]):
        return None
    command = event["input"].get("command")
    if not isinstance(command, str):
        return {"block": "a shell call needs a command string"}
    reason = refusal(command.replace("\t", " "), host.config.get("commands", []))
    return None if reason is None else {"block": reason}
