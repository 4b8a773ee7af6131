"""The policy the OpenAI Agents SDK tests run: one inline Python script hook, every point."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write

POLICY = r"""
kind: script_hook
name: policy
language: python
source: |
  def on_before_user_message(event, host):
      q = event["question"]
      if "password" in q:
          return {"block": "please do not share passwords"}
      if q == "ping":
          return {"answer": "pong", "notice": "answered from the policy"}
      if "@" in q:
          return {"question": host.redact(q, ["[a-z.]+@[a-z.]+"], "[email]")}
      if "city" in q:
          return {"messages": [{"role": "system", "content": "The user's city is Moscow."}]}
      return None

  def on_before_call(event, host):
      for message in event["messages"]:
          if "forbidden topic" in str(message.get("content", "")):
              return {"block": "this topic is not discussed here"}
      change = {"sections": ["Answer in English."]}
      if "narrow" in str(event["messages"]):
          change["tools"] = [t for t in event["tools"] if t != "delete_file"]
      if "sk-" in str(event["messages"]):
          change["messages"] = [redacted(m, host) for m in event["messages"]]
      return change

  def redacted(message, host):
      copy = dict(message)
      if isinstance(copy.get("content"), str):
          copy["content"] = host.redact(copy["content"], ["sk-[A-Za-z0-9]{20,}"], "[REDACTED]")
      return copy

  def on_tool_call(event, host):
      name, data = event["name"], event["input"]
      if name == "delete_file":
          return {"block": "deleting files is not allowed here"}
      if name in ["write_file", "move_file", "edit_file"] and data.get("dryRun") is not True:
          return {"block": "the files are read-only here"}
      if name == "get_file_info":
          return {"input": {"path": data.get("path", "") + ".bak"}}
      if event["name"] == "crash":
          raise ValueError("the guard crashed")
      url = data.get("url", "")
      if url.startswith("http://"):
          return {"input": {"url": "https://" + url[7:]}}
      return None

  def on_tool_result(event, host):
      if event["name"] == "crash_result":
          raise ValueError("the redactor crashed")
      if isinstance(event["result"], str) and "sk-" in event["result"]:
          return {"result": host.redact(event["result"], ["sk-[A-Za-z0-9]{20,}"], "[REDACTED]")}
      return None

  def on_before_assistant_message(event, host):
      if "explode" in event["answer"]:
          raise ValueError("the answer check crashed")
      if "internal" in event["answer"]:
          return {"answer": "I cannot share that."}
      return None

  def on_after_turn(event, host):
      host.log("tools: " + ",".join([c["name"] for c in event["tool_calls"]]))
      return None
"""

SECRET = "sk-abcdefghijklmnopqrstuvwxyz012345"


def policy_config(root: Path) -> Path:
    """A config folder with agent ``ops`` guarded by ``POLICY``; returns the folder."""
    return write(
        root,
        {
            "engine.yaml": """
                process: oai-test
                scripts:
                  timeout_ms: 1000
                  workers: 1
                """,
            "agents/ops/agent.yaml": "hook_files: [hooks/policy.yaml]\n",
            "agents/ops/hooks/policy.yaml": POLICY,
        },
    )
