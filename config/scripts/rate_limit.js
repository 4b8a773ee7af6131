// rate_limit: at most host.config.max_calls calls per session of each tool in host.config.tools
// (with no list, all tools are counted together), the call over it blocked.
// One host.state key per user scope, "sessions": the counts of the user's keep_sessions most
// recent sessions (default 8), so however many sessions a user opens, the state stays one
// small key (a key per session would reach max_state_keys after 64 sessions and then block
// every call). The key expires forget_after_s (default 86400) after the last counted call,
// measured against the event's time; a session pushed out of the list starts counting afresh.
function on_tool_call(event, host) {
  var tools = host.config.tools;
  if (tools && tools.length > 0 && tools.indexOf(event.name) < 0) {
    return null;
  }
  var limit = host.config.max_calls || 3;
  var session = (event.scope.session_id || event.scope.user_id || "default").slice(0, 128);
  var tool = tools && tools.length > 0 ? event.name : "*";
  var recent = host.state.get("sessions") || [];
  var mine = { id: session, calls: {} };
  var others = [];
  for (var i = 0; i < recent.length; i++) {
    if (recent[i].id === session) { mine = recent[i]; } else { others.push(recent[i]); }
  }
  var used = mine.calls[tool] || 0;
  if (used >= limit) {
    return { block: "the tool " + event.name + " was already called " + used + " times in this session (limit " + limit + ")" };
  }
  mine.calls[tool] = used + 1;
  others.push(mine);
  var keep = host.config.keep_sessions || 8;
  host.state.set("sessions", others.slice(-keep), { ttl_s: host.config.forget_after_s || 86400 });
  return null;
}
