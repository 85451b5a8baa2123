"""Test-only hostcore plugin: the fixture tools the MCP conformance suite calls.

The official suite (``@modelcontextprotocol/conformance``, see ``run.sh`` beside this file) drives a
server through tools with fixed names and checks what they return. This plugin supplies them with
hostcore's ordinary tool API so ``run.sh`` can judge the real ``POST /_/mcp`` endpoint. Load it only
in a conformance run (it is not packaged and registers no entry point), for example with
``host.plugins.register(fixture_plugin)`` or whatever the test app factory offers.

What each tool answers is copied from the scenario descriptions in conformance 0.2.0-alpha.12
(``conformance list --server`` names them; the text is in its ``dist/index.js``).

The tools carry no return annotation on purpose: hostcore derives ``outputSchema`` from the return
annotation, and ``-> mt.CallToolResult`` would advertise CallToolResult's own schema as the output.

Two things the adapter must let through unchanged for these to pass:

* ``mcp_types.CallToolResult`` and ``mcp_types.InputRequiredResult`` return values (2026-07-28
  multi-round-trip tools answer ``resultType: "input_required"``);
* ``mcp.shared.exceptions.MCPError`` raised by a tool must become a JSON-RPC error with that code
  (``-32021`` for a missing client capability, ``-32602`` for a tampered ``requestState``), not an
  ``isError`` tool result. The SDK maps those codes to HTTP 400 on the 2026-07-28 wire.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import warnings
from typing import Annotated, Any

import mcp_types as mt
from mcp.shared.exceptions import MCPError
from pydantic import Field

from hostcore import hookimpl, tool

# 1x1 red PNG and a minimal WAV, the same bytes as the suite's reference server.
TEST_IMAGE_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

# requestState is attacker-controlled (the client echoes it). The fixtures sign their own state so
# the tampered-state scenario passes even where the host installs no RequestStateBoundary; with
# one installed, the boundary seals this token again and rejects tampering before we run.
_STATE_KEY = os.environ.get("HOSTCORE_CONFORMANCE_STATE_KEY", "hostcore-conformance-fixture").encode()


def _text(text: str) -> mt.CallToolResult:
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])


def _seal(state: dict[str, Any]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(state, sort_keys=True).encode()).decode().rstrip("=")
    mac = hmac.new(_STATE_KEY, body.encode(), hashlib.sha256).hexdigest()
    return f"{body}.{mac}"


def _unseal(token: Any) -> dict[str, Any]:
    """The state a fixture minted, or a JSON-RPC -32602 error when it was altered."""
    if not isinstance(token, str) or "." not in token:
        raise MCPError(mt.INVALID_PARAMS, "Invalid requestState")
    body, mac = token.rsplit(".", 1)
    good = hmac.new(_STATE_KEY, body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, good):
        raise MCPError(mt.INVALID_PARAMS, "Invalid requestState: integrity check failed")
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def _raw(ctx: Any, key: str) -> Any:
    """A top-level request param (``inputResponses``, ``requestState``) as it came off the wire."""
    params = getattr(ctx, "params", None) or {}
    return params.get(key)


def _accepted(responses: Any, key: str) -> dict[str, Any] | None:
    """The ``content`` of an accepted elicitation answer under ``key``, else None."""
    if not isinstance(responses, dict):
        return None
    answer = responses.get(key)
    if isinstance(answer, dict) and answer.get("action") == "accept" and isinstance(answer.get("content"), dict):
        return answer["content"]
    return None


def _sampled_text(responses: Any, key: str) -> str | None:
    if not isinstance(responses, dict) or not isinstance(responses.get(key), dict):
        return None
    content = responses[key].get("content")
    if isinstance(content, list):
        content = content[0] if content else None
    return content.get("text") if isinstance(content, dict) else None


def _roots(responses: Any, key: str) -> list[dict[str, Any]] | None:
    if not isinstance(responses, dict) or not isinstance(responses.get(key), dict):
        return None
    roots = responses[key].get("roots")
    return roots if isinstance(roots, list) else None


def _elicit(message: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": properties, "required": required},
        },
    }


def _sample(text: str, max_tokens: int) -> dict[str, Any]:
    return {
        "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens},
    }


_LIST_ROOTS = {"method": "roots/list", "params": {}}


def _input_required(requests: dict[str, Any], state: dict[str, Any] | None = None) -> mt.InputRequiredResult:
    return mt.InputRequiredResult.model_validate(
        {
            "resultType": "input_required",
            "inputRequests": requests,
            **({"requestState": _seal(state)} if state is not None else {}),
        }
    )


# --- content tools (2025-11-25 and 2026-07-28) -------------------------------------------------


@tool(read_only=True, scope="read", title="Conformance: simple text")
def test_simple_text():
    """Conformance fixture: returns one text block."""
    return _text("This is a simple text response for testing.")


@tool(read_only=True, scope="read", title="Conformance: image")
def test_image_content():
    """Conformance fixture: returns one image block (a 1x1 PNG)."""
    return mt.CallToolResult(content=[mt.ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png")])


@tool(read_only=True, scope="read", title="Conformance: audio")
def test_audio_content():
    """Conformance fixture: returns one audio block (a minimal WAV)."""
    return mt.CallToolResult(content=[mt.AudioContent(type="audio", data=TEST_AUDIO_BASE64, mime_type="audio/wav")])


@tool(read_only=True, scope="read", title="Conformance: embedded resource")
def test_embedded_resource():
    """Conformance fixture: returns one embedded text resource."""
    resource = mt.TextResourceContents(
        uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
    )
    return mt.CallToolResult(content=[mt.EmbeddedResource(type="resource", resource=resource)])


@tool(read_only=True, scope="read", title="Conformance: mixed content")
def test_multiple_content_types():
    """Conformance fixture: returns text, image and embedded resource blocks."""
    resource = mt.TextResourceContents(
        uri="test://mixed-content-resource",
        mime_type="application/json",
        text=json.dumps({"test": "data", "value": 123}),
    )
    return mt.CallToolResult(
        content=[
            mt.TextContent(type="text", text="Multiple content types test:"),
            mt.ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png"),
            mt.EmbeddedResource(type="resource", resource=resource),
        ]
    )


@tool(read_only=True, scope="read", title="Conformance: error")
def test_error_handling():
    """Conformance fixture: always fails with an isError result."""
    return mt.CallToolResult(
        is_error=True,
        content=[mt.TextContent(type="text", text="This tool intentionally returns an error for testing")],
    )


@tool(read_only=True, scope="read", title="Conformance: progress")
async def test_tool_with_progress(*, ctx: Any):
    """Conformance fixture: reports progress 0, 50 and 100 of 100, 50 ms apart, when given a progress token."""
    for step in (0, 50, 100):
        # A no-op when the caller sent no progressToken. On a JSON-response transport the
        # notifications have no stream to ride and are dropped (the scenario then fails).
        await ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
        if step != 100:
            await asyncio.sleep(0.05)
    token = ctx.meta.progress_token if getattr(ctx, "meta", None) is not None else None
    return _text(f"Progress reported for token {token}")


# --- handshake-era server-to-client tools (2025-11-25 only) ------------------------------------


@tool(read_only=True, scope="read", title="Conformance: logging")
async def test_tool_with_logging(*, ctx: Any):
    """Conformance fixture: sends three info log notifications, 50 ms apart."""
    with warnings.catch_warnings():  # logging is deprecated as of 2026-07-28 (SEP-2577)
        warnings.simplefilter("ignore")
        for i, message in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
            if i:
                await asyncio.sleep(0.05)
            await ctx.session.send_log_message("info", message, related_request_id=ctx.request_id)
    return _text("Tool with logging executed successfully")


@tool(read_only=True, scope="read", title="Conformance: sampling")
async def test_sampling(
    prompt: Annotated[str, Field(description="The prompt to send to the LLM")], *, ctx: Any
):
    """Conformance fixture: asks the client for an LLM completion of the prompt (sampling/createMessage)."""
    with warnings.catch_warnings():  # sampling is deprecated as of 2026-07-28 (SEP-2577)
        warnings.simplefilter("ignore")
        result = await ctx.session.create_message(
            [mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=prompt))],
            max_tokens=100,
            related_request_id=ctx.request_id,
        )
    content = result.content[0] if isinstance(result.content, list) else result.content
    return _text(f"LLM response: {getattr(content, 'text', 'No response')}")


async def _elicit_form(ctx: Any, message: str, schema: dict[str, Any]) -> mt.ElicitResult:
    return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)


@tool(read_only=True, scope="read", title="Conformance: elicitation")
async def test_elicitation(
    message: Annotated[str, Field(description="The message to show the user")], *, ctx: Any
):
    """Conformance fixture: asks the user for input (elicitation/create) and reports the answer."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    result = await _elicit_form(ctx, message, schema)
    return _text(f"User response: action={result.action}, content={json.dumps(result.content or {})}")


@tool(read_only=True, scope="read", title="Conformance: elicitation defaults")
async def test_elicitation_sep1034_defaults(*, ctx: Any):
    """Conformance fixture (SEP-1034): elicitation whose fields all carry default values."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": [],
    }
    result = await _elicit_form(ctx, "Please review and update the form fields with defaults", schema)
    return _text(f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}")


@tool(read_only=True, scope="read", title="Conformance: elicitation enums")
async def test_elicitation_sep1330_enums(*, ctx: Any):
    """Conformance fixture (SEP-1330): elicitation using all five enum schema shapes."""
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"],
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
        "required": [],
    }
    result = await _elicit_form(ctx, "Please select options from the enum fields", schema)
    return _text(f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}")


# --- 2026-07-28 multi-round-trip (SEP-2322 InputRequiredResult) tools ---------------------------

_NAME_SCHEMA = ({"name": {"type": "string"}}, ["name"])


@tool(read_only=True, scope="read", title="Conformance: input required (elicitation)")
def test_input_required_result_elicitation(*, ctx: Any):  # returns CallToolResult | InputRequiredResult
    """Conformance fixture (SEP-2322): asks for the user's name, then greets them."""
    answer = _accepted(_raw(ctx, "inputResponses"), "user_name")
    if answer is None or not isinstance(answer.get("name"), str):
        return _input_required({"user_name": _elicit("What is your name?", *_NAME_SCHEMA)})
    return _text(f"Hello, {answer['name']}!")


@tool(read_only=True, scope="read", title="Conformance: input required (sampling)")
def test_input_required_result_sampling(*, ctx: Any):  # returns CallToolResult | InputRequiredResult
    """Conformance fixture (SEP-2322): asks the client's LLM a question, then reports the answer."""
    answer = _sampled_text(_raw(ctx, "inputResponses"), "capital_question")
    if answer is None:
        return _input_required({"capital_question": _sample("What is the capital of France?", 100)})
    return _text(f"LLM answered: {answer}")


@tool(read_only=True, scope="read", title="Conformance: input required (roots)")
def test_input_required_result_list_roots(*, ctx: Any):  # returns CallToolResult | InputRequiredResult
    """Conformance fixture (SEP-2322): asks for the client's roots, then lists them."""
    roots = _roots(_raw(ctx, "inputResponses"), "client_roots")
    if roots is None:
        return _input_required({"client_roots": _LIST_ROOTS})
    return _text("Client roots: " + ", ".join(str(r.get("uri")) for r in roots if isinstance(r, dict)))


@tool(read_only=True, scope="read", title="Conformance: input required (request state)")
def test_input_required_result_request_state(*, ctx: Any):  # returns CallToolResult | InputRequiredResult
    """Conformance fixture (SEP-2322): asks for confirmation and checks the echoed requestState."""
    first = _input_required(
        {"confirm": _elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])}, {"tool": "request_state"}
    )
    token = _raw(ctx, "requestState")
    if token is None:
        return first
    state = _unseal(token)
    if state.get("tool") != "request_state" or _accepted(_raw(ctx, "inputResponses"), "confirm") is None:
        return first
    return _text("state-ok: requestState verified and confirmation received")


@tool(read_only=True, scope="read", title="Conformance: input required (several)")
def test_input_required_result_multiple_inputs(*, ctx: Any):  # returns CallToolResult | InputRequiredResult
    """Conformance fixture (SEP-2322): asks for an elicitation, a sampling and the roots at once."""
    responses = _raw(ctx, "inputResponses")
    token = _raw(ctx, "requestState")
    if token is not None:
        _unseal(token)
    name = _accepted(responses, "user_name")
    greeting = _sampled_text(responses, "greeting")
    roots = _roots(responses, "client_roots")
    if name is None or greeting is None or roots is None:
        return _input_required(
            {
                "user_name": _elicit("What is your name?", *_NAME_SCHEMA),
                "greeting": _sample("Generate a greeting", 50),
                "client_roots": _LIST_ROOTS,
            },
            {"tool": "multiple_inputs"},
        )
    return _text(f"{greeting} {name.get('name')} ({len(roots)} roots)")


@tool(read_only=True, scope="read", title="Conformance: input required (three rounds)")
def test_input_required_result_multi_round(*, ctx: Any):  # returns CallToolResult | InputRequiredResult
    """Conformance fixture (SEP-2322): asks a name, then a colour, carrying state between rounds."""
    responses = _raw(ctx, "inputResponses")
    token = _raw(ctx, "requestState")
    state = _unseal(token) if token is not None else {"round": 1}
    if state.get("round") == 2:
        name = state.get("name")
        color = _accepted(responses, "step2")
        if color is not None and isinstance(color.get("color"), str):
            return _text(f"{name}'s favorite color is {color['color']}")
    else:
        name = _accepted(responses, "step1") if token is not None else None
        if name is None or not isinstance(name.get("name"), str):
            return _input_required(
                {"step1": _elicit("Step 1: What is your name?", *_NAME_SCHEMA)}, {"round": 1}
            )
        name = name["name"]
    return _input_required(
        {"step2": _elicit("Step 2: What is your favorite color?", {"color": {"type": "string"}}, ["color"])},
        {"round": 2, "name": name},
    )


@tool(read_only=True, scope="read", title="Conformance: input required (tamper check)")
def test_input_required_result_tampered_state(*, ctx: Any):  # returns CallToolResult | InputRequiredResult
    """Conformance fixture (SEP-2322): signs its requestState and rejects an altered one with -32602."""
    token = _raw(ctx, "requestState")
    if token is None:
        return _input_required(
            {"confirm": _elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])}, {"tool": "tampered_state"}
        )
    if _unseal(token).get("tool") != "tampered_state":
        raise MCPError(mt.INVALID_PARAMS, "Invalid requestState")
    return _text("requestState verified")


@tool(read_only=True, scope="read", title="Conformance: input required (capabilities)")
def test_input_required_result_capabilities(*, ctx: Any):  # returns CallToolResult | InputRequiredResult
    """Conformance fixture (SEP-2322): asks only for what the client declared it can answer."""
    caps = ctx.session.client_capabilities or mt.ClientCapabilities()
    responses = _raw(ctx, "inputResponses")
    wanted: dict[str, Any] = {}
    if caps.sampling is not None and _sampled_text(responses, "summary") is None:
        wanted["summary"] = _sample("Summarise the capabilities test", 50)
    if caps.elicitation is not None and _accepted(responses, "user_name") is None:
        wanted["user_name"] = _elicit("What is your name?", *_NAME_SCHEMA)
    if caps.roots is not None and _roots(responses, "client_roots") is None:
        wanted["client_roots"] = _LIST_ROOTS
    if wanted:
        return _input_required(wanted)
    return _text("Nothing needed from the client")


# --- server-stateless diagnostic tools (2026-07-28) ---------------------------------------------


@tool(read_only=True, scope="read", title="Conformance: missing capability")
def test_missing_capability(*, ctx: Any):
    """Conformance fixture (SEP-2575): needs the client's sampling capability; -32021 without it."""
    caps = ctx.session.client_capabilities
    if caps is None or caps.sampling is None:
        raise MCPError(
            mt.MISSING_REQUIRED_CLIENT_CAPABILITY,
            "This tool requires the client's sampling capability",
            data={"requiredCapabilities": {"sampling": {}}},
        )
    return _text("Client declared sampling")


@tool(read_only=True, scope="read", title="Conformance: streaming elicitation")
def test_streaming_elicitation(*, ctx: Any):  # returns CallToolResult | InputRequiredResult
    """Conformance fixture (SEP-2575): asks for input with an InputRequiredResult, never a server request."""
    answer = _accepted(_raw(ctx, "inputResponses"), "user_name")
    if answer is None:
        return _input_required({"user_name": _elicit("What is your name?", *_NAME_SCHEMA)})
    return _text(f"Hello, {answer.get('name')}!")


@tool(read_only=True, scope="read", title="Conformance: logging opt-in")
async def test_logging_tool(*, ctx: Any):
    """Conformance fixture (SEP-2575): tries to log; nothing may be sent unless the request set a log level."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        await ctx.session.send_log_message("info", "test_logging_tool ran", related_request_id=ctx.request_id)
    return _text("Logging tool executed")


FIXTURE_TOOLS = (
    test_simple_text,
    test_image_content,
    test_audio_content,
    test_embedded_resource,
    test_multiple_content_types,
    test_error_handling,
    test_tool_with_progress,
    test_tool_with_logging,
    test_sampling,
    test_elicitation,
    test_elicitation_sep1034_defaults,
    test_elicitation_sep1330_enums,
    test_input_required_result_elicitation,
    test_input_required_result_sampling,
    test_input_required_result_list_roots,
    test_input_required_result_request_state,
    test_input_required_result_multiple_inputs,
    test_input_required_result_multi_round,
    test_input_required_result_tampered_state,
    test_input_required_result_capabilities,
    test_missing_capability,
    test_streaming_elicitation,
    test_logging_tool,
)


@hookimpl
def register_tools(register, host):
    for fixture in FIXTURE_TOOLS:
        register(fixture)


# --- resources, prompts and completions the suite reads --------------------------------------

from hostcore import prompt, resource  # noqa: E402 - grouped with what uses it


@resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text():
    """A static text resource."""
    return "This is the content of the static text resource."


@resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary():
    """A static binary resource (PNG)."""
    return base64.b64decode(TEST_IMAGE_BASE64)


@resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource():
    """A resource that can be subscribed to."""
    return "Watched resource content"


@resource("test://template/{id}/data", name="template", mime_type="application/json")
def template_data(id: str):
    """A templated resource."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


def _user(content: Any) -> mt.PromptMessage:
    return mt.PromptMessage(role="user", content=content)


@prompt
def test_simple_prompt():
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@prompt(complete={"arg1": lambda prefix: [v for v in ("paris", "park", "party") if v.startswith(prefix)]})
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
):
    """A prompt with arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@prompt
def test_prompt_with_embedded_resource(resourceUri: Annotated[str, Field(description="URI of the resource to embed")]):
    """A prompt with an embedded resource."""
    res = mt.TextResourceContents(uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing.")
    return [_user(mt.EmbeddedResource(type="resource", resource=res)), _user(mt.TextContent(type="text", text="Please process the embedded resource above."))]


@prompt
def test_prompt_with_image():
    """A prompt with image content."""
    return [
        _user(mt.ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png")),
        _user(mt.TextContent(type="text", text="Please analyze the image above.")),
    ]


@prompt
def test_input_required_result_prompt(*, ctx: Any):
    """A prompt that needs elicitation input (SEP-2322)."""
    answer = _accepted(_raw(ctx, "inputResponses"), "user_context")
    if answer is None:
        return _input_required(
            {"user_context": _elicit("What context should the prompt use?", {"context": {"type": "string"}}, ["context"])}
        )
    return f"Prompt using context: {answer.get('context')}"


@hookimpl
def register_resources(register, host):
    for r in (static_text, static_binary, watched_resource, template_data):
        register(r)


@hookimpl
def register_prompts(register, host):
    for p in (test_simple_prompt, test_prompt_with_arguments, test_prompt_with_embedded_resource, test_prompt_with_image,
              test_input_required_result_prompt):  # fmt: skip
        register(p)
