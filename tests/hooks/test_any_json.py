"""Every JSON an agent can send is stored (issue 35): Python's json reads `NaN`,
`Infinity` and numbers beyond a double, which SQLite's JSON_VALID and PostgreSQL's jsonb
refuse; such a payload used to get HTTP 500 and the event was lost. The hook endpoints are
fuzzed with generated payloads through the real Django stack."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.models import Event

_BODY = (
    '{"session_id": "nan-1", "cwd": "/tmp/p", "hook_event_name": "PostToolUse", '
    '"tool_name": "Bash", "tool_use_id": "%s", "tool_input": {"command": "stats"}, '
    '"tool_response": {"mean": %s, "max": %s, "min": %s, "big": %s}}'
)


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
def test_non_finite_numbers_are_stored_as_text(client: Client, value: str) -> None:
    body = _BODY % (f"t-{value}", value, value, value, "1.5")
    resp = client.post(
        "/api/hooks/claude-code/observation", data=body, content_type="application/json"
    )
    assert resp.status_code == 200, resp.content
    event = Event.objects.get(tool_use_id=f"t-{value}")
    assert event.payload["tool_response"]["mean"] == value
    assert event.payload["tool_response"]["big"] == 1.5  # an ordinary float stays a number


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.django_db
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    tool_input=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    tool_response=json_values,
    n=st.integers(0, 10**9),
)
def test_whatever_json_an_agent_sends_is_answered_and_stored(
    client: Client, tool_input: Any, tool_response: Any, n: int
) -> None:
    tool_use_id = f"fuzz-{n}"
    Event.objects.filter(tool_use_id=tool_use_id).delete()
    payload = {
        "session_id": "fuzz", "cwd": "/tmp/fuzz", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_use_id": tool_use_id, "tool_input": tool_input, "tool_response": tool_response,
    }  # fmt: skip
    body = json.dumps(payload)  # allow_nan: writes NaN / Infinity as an agent's JSON may
    resp = client.post(
        "/api/hooks/claude-code/observation", data=body, content_type="application/json"
    )
    assert resp.status_code == 200, resp.content
    assert Event.objects.filter(tool_use_id=tool_use_id).exists()
