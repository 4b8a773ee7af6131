// inject_context: add a section to the instruction before each LLM call, from host.config
// (title, lines) plus the names of the tools the model is offered.
function on_before_call(event, host) {
  var lines = host.config.lines || [];
  if (lines.length === 0) {
    return null;
  }
  var text = "## " + (host.config.title || "Context") + "\n" + lines.map(function (l) { return "- " + l; }).join("\n");
  if (event.tools.length > 0 && host.config.list_tools !== false) {
    text += "\n- Tools offered: " + event.tools.map(function (t) { return typeof t === "string" ? t : t.name; }).join(", ");
  }
  return { sections: [text] };
}
