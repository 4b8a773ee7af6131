# inject_context: add a section to the instruction before each LLM call, from host.config
# (title, lines) plus the names of the tools the model is offered.
def on_before_call(event, host):
    lines = host.config.get("lines", [])
    if not lines:
        return None
    title = host.config.get("title", "Context")
    text = "## " + title + "\n" + "\n".join("- " + line for line in lines)
    if event["tools"] and host.config.get("list_tools", True) is not False:
        names = [t if isinstance(t, str) else t["name"] for t in event["tools"]]
        text += "\n- Tools offered: " + ", ".join(names)
    return {"sections": [text]}
