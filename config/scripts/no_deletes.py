# no_deletes: block destructive tools by name (host.config["forbidden"]) and by arguments,
# e.g. `rm -rf` inside the command of a shell tool (host.config["shell_tools"]).
DESTRUCTIVE = [
    "\\brm\\s+(-\\w+\\s+)*-\\w*[rRf]",  # rm -rf, rm -r, rm -f ...
    "\\bfind\\b.*\\s-delete\\b",
    "\\bmkfs(\\.\\w+)?\\b",
    "\\bdd\\s+.*\\bof=/dev/",
    "(?i)\\bdrop\\s+(table|database)\\b",
    "(?i)\\btruncate\\s+table\\b",
]


def on_tool_call(event, host):
    if event["name"] in host.config.get("forbidden", []):
        return {"block": "the tool " + event["name"] + " deletes data and is not allowed here"}
    command = event["input"].get("command")
    shells = host.config.get("shell_tools", ["shell"])
    if event["name"] not in shells or not isinstance(command, str):
        return None
    for pattern in DESTRUCTIVE:
        if host.match(pattern, command):
            host.log("destructive command refused: " + command)
            return {"block": "the command deletes data and is not allowed here: " + command}
    return None
