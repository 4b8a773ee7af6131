var WRITES = ["write_file", "move_file", "edit_file", "create_directory"];

function on_tool_call(event, host) {
  var input = event.input;
  if (event.name === "edit_file" && input.dryRun === true) { return null; }
  if (WRITES.indexOf(event.name) >= 0) {
    return { block: "this gateway is read-only: " + event.name + " is not allowed" };
  }
  var path = String(input.path || "");
  if (path.indexOf("guardcrash") >= 0) { throw new Error("guard crashed on purpose"); }
  if (path.indexOf("rewrite-bad") >= 0) { return { input: { path: 42 } }; }
  if (path.indexOf("rewrite-ok") >= 0) { return { input: { path: path.replace("rewrite-ok", "notes.txt") } }; }
  return null;
}

function clean(value, host) {
  if (typeof value === "string") { return host.redact(value, ["sk-[A-Za-z0-9]{20,}"], "[REDACTED]"); }
  if (Array.isArray(value)) { return value.map(function (v) { return clean(v, host); }); }
  if (value !== null && typeof value === "object") {
    var out = {};
    Object.keys(value).forEach(function (k) { out[k] = clean(value[k], host); });
    return out;
  }
  return value;
}

function on_tool_result(event, host) {
  if (event.name === "picture") {  // says what it saw of the image; the block itself stays
    var seen = { type: "text", text: JSON.stringify(event.result.content[0]) };
    return { result: { content: event.result.content.concat([seen]), isError: false } };
  }
  if (event.input.dropFirst === true) {  // withholds the first block, redacts the rest
    var kept = clean(event.result, host);
    kept.content = kept.content.slice(1);
    return { result: kept };
  }
  var path = String(event.input.path || "");
  if (path.indexOf("badshape") >= 0) { return { result: { content: "not a list" } }; }
  if (path.indexOf("badschema") >= 0) {
    return { result: { content: [{ type: "text", text: "x" }], structuredContent: { content: 5 }, isError: false } };
  }
  if (path.indexOf("resultcrash") >= 0) { throw new Error("redactor crashed on purpose"); }
  var result = clean(event.result, host);
  return JSON.stringify(result) === JSON.stringify(event.result) ? null : { result: result };
}
