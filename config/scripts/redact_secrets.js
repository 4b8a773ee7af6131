// redact_secrets: hide API keys, bearer tokens and card numbers in answers
// (before_assistant_message) and in tool results (tool_result). host.config.patterns adds more.
var SECRETS = [
  "\\bsk-[A-Za-z0-9_-]{16,}",                       // OpenAI-style API keys
  "\\b(ghp|gho|ghs|xox[abp])[-_][A-Za-z0-9-]{10,}",  // GitHub / Slack tokens
  "\\bAKIA[0-9A-Z]{16}\\b",                          // AWS access key ids
  "(?i)\\bbearer\\s+[A-Za-z0-9._~+/=-]{12,}",        // Authorization: Bearer ...
  "\\b\\d{4}([ -]?\\d{4}){3}\\b"                     // card numbers, 16 digits
];

function patterns(host) {
  return SECRETS.concat(host.config.patterns || []);
}

function clean(value, host) {
  if (typeof value === "string") {
    return host.redact(value, patterns(host), host.config.replacement || "[REDACTED]");
  }
  if (Array.isArray(value)) {
    return value.map(function (item) { return clean(item, host); });
  }
  if (value !== null && typeof value === "object") {
    var out = {};
    Object.keys(value).forEach(function (k) { out[k] = clean(value[k], host); });
    return out;
  }
  return value;
}

function on_before_assistant_message(event, host) {
  var answer = clean(event.answer, host);
  return answer === event.answer ? null : { answer: answer };
}

function on_tool_result(event, host) {
  var result = clean(event.result, host);
  if (JSON.stringify(result) === JSON.stringify(event.result)) {
    return null;
  }
  host.emit({ type: "status", data: { description: "secrets redacted from " + event.name } });
  return { result: result };
}
