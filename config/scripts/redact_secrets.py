# redact_secrets: hide API keys, bearer tokens and card numbers in answers
# (before_assistant_message) and in tool results (tool_result). host.config["patterns"] adds more.
SECRETS = [
    "\\bsk-[A-Za-z0-9_-]{16,}",  # OpenAI-style API keys
    "\\b(ghp|gho|ghs|xox[abp])[-_][A-Za-z0-9-]{10,}",  # GitHub / Slack tokens
    "\\bAKIA[0-9A-Z]{16}\\b",  # AWS access key ids
    "(?i)\\bbearer\\s+[A-Za-z0-9._~+/=-]{12,}",  # Authorization: Bearer ...
    "\\b\\d{4}([ -]?\\d{4}){3}\\b",  # card numbers, 16 digits
]


def patterns(host):
    return SECRETS + host.config.get("patterns", [])


def clean(value, host):
    if isinstance(value, str):
        return host.redact(value, patterns(host), host.config.get("replacement", "[REDACTED]"))
    if isinstance(value, list):
        return [clean(item, host) for item in value]
    if isinstance(value, dict):
        return {k: clean(v, host) for k, v in value.items()}
    return value


def on_before_assistant_message(event, host):
    answer = clean(event["answer"], host)
    return None if answer == event["answer"] else {"answer": answer}


def on_tool_result(event, host):
    result = clean(event["result"], host)
    if result == event["result"]:
        return None
    host.emit({"type": "status", "data": {"description": "secrets redacted from " + event["name"]}})
    return {"result": result}
