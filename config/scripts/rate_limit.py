# rate_limit: at most host.config["max_calls"] calls of each tool in host.config["tools"] per
# session (default: every tool), counted in host.state; the call over the limit is blocked.
def on_tool_call(event, host):
    tools = host.config.get("tools")
    if tools and event["name"] not in tools:
        return None
    limit = host.config.get("max_calls", 3)
    scope = event["scope"]
    session = scope.get("session_id") or scope.get("user_id") or "default"
    key = "calls:" + session + ":" + event["name"]
    used = host.state.get(key) or 0
    if used >= limit:
        return {
            "block": "the tool "
            + event["name"]
            + " was already called "
            + str(used)
            + " times in this session (limit "
            + str(limit)
            + ")"
        }
    host.state.set(key, used + 1)
    return None
