// rate_limit: at most host.config.max_calls calls of each tool in host.config.tools per session
// (default: every tool), counted in host.state; the call over the limit is blocked.
function on_tool_call(event, host) {
  var tools = host.config.tools;
  if (tools && tools.length > 0 && tools.indexOf(event.name) < 0) {
    return null;
  }
  var limit = host.config.max_calls || 3;
  var session = event.scope.session_id || event.scope.user_id || "default";
  var key = "calls:" + session + ":" + event.name;
  var used = host.state.get(key) || 0;
  if (used >= limit) {
    return { block: "the tool " + event.name + " was already called " + used + " times in this session (limit " + limit + ")" };
  }
  host.state.set(key, used + 1);
  return null;
}
