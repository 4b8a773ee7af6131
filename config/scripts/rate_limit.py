# rate_limit: at most host.config["max_calls"] calls per session of each tool in
# host.config["tools"] (with no list, all tools are counted together), the call over it blocked.
# One host.state key per user scope, "sessions": the counts of the user's keep_sessions most
# recent sessions (default 8), so however many sessions a user opens, the state stays one
# small key (a key per session would reach max_state_keys after 64 sessions and then block
# every call). The key expires forget_after_s (default 86400) after the last counted call,
# measured against the event's time; a session pushed out of the list starts counting afresh.
def on_tool_call(event, host):
    tools = host.config.get("tools")
    if tools and event["name"] not in tools:
        return None
    limit = host.config.get("max_calls", 3)
    scope = event["scope"]
    session = (scope.get("session_id") or scope.get("user_id") or "default")[:128]
    tool = event["name"] if tools else "*"
    recent = host.state.get("sessions") or []
    mine = {"id": session, "calls": {}}
    for entry in recent:
        if entry["id"] == session:
            mine = entry
    used = mine["calls"].get(tool, 0)
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
    mine["calls"][tool] = used + 1
    others = [entry for entry in recent if entry["id"] != session]
    keep = host.config.get("keep_sessions", 8)
    ttl = host.config.get("forget_after_s", 86400)
    host.state.set("sessions", (others + [mine])[-keep:], ttl_s=ttl)
    return None
