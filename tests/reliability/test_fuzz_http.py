"""Fuzzing the AppServer's HTTP API from its own OpenAPI document (schemathesis).

Every documented operation, as a user, as an agent, with no credentials and with a
credential that is not one; positive and negative (schema-violating) requests.
Nothing may answer 5xx; answers must match the documented statuses, content types,
headers and bodies; every 4xx body is the one error shape with a stable code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from lineup.protocol import ErrorCode
from lineup.server.openapi import build_openapi
from tests.support.appserver import AppServerProcess

EXAMPLES = 30
"""Per operation and credential: 12 operations x 4 credentials x 30 is ~1,300 requests."""

PASSWORD = "correct horse battery"

OPERATIONS = [
    (method.upper(), path)
    for path, methods in build_openapi()["paths"].items()
    for method in methods
]

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

STABLE_CODES = {code.value for code in ErrorCode}

Operation = schemathesis.APIOperation[Any, Any, Any, Any]
AnyCase = Case[Operation]


@dataclass
class Principals:
    url: str
    user_name: str
    user_id: str
    user_token: str
    agent_key: str
    conversation_id: str

    def fresh_user_token(self) -> str:
        response = httpx.post(
            self.url + "/v1/login", json={"username": self.user_name, "password": PASSWORD}
        )
        assert response.status_code == 200, response.text
        return str(response.json()["token"])


@pytest.fixture(scope="module")
def principals(appserver: AppServerProcess) -> Principals:
    appserver.add_user("fuzz-user", PASSWORD)
    agent_key = appserver.add_agent("fuzz-agent")
    logged_in = httpx.post(
        appserver.url + "/v1/login", json={"username": "fuzz-user", "password": PASSWORD}
    ).json()
    token = logged_in["token"]
    created = httpx.post(
        appserver.url + "/v1/conversations",
        json={"agent_id": "fuzz-agent"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert created.status_code == 201, created.text
    return Principals(
        appserver.url, "fuzz-user", logged_in["user_id"], token, agent_key, created.json()["id"]
    )


@pytest.fixture(scope="module")
def schema(appserver: AppServerProcess) -> schemathesis.BaseSchema:
    loaded = schemathesis.openapi.from_url(appserver.url + "/openapi.json")
    served = set()
    for result in loaded.get_all_operations():
        assert isinstance(result, Ok), result
        served.add((result.ok().method.upper(), result.ok().path))
    assert served == set(OPERATIONS), "the served document is not build_openapi()"
    return loaded


@pytest.fixture(scope="module")
def session() -> Iterator[requests.Session]:
    with requests.Session() as opened:
        yield opened


def assert_standard_error(case: AnyCase, response: schemathesis.Response) -> None:
    """Every 4xx answer is ``{"error": {"code", "message"[, "path"]}}`` with a stable code."""
    if not 400 <= response.status_code < 500:
        return
    repro = case.as_curl_command()
    assert response.headers.get("content-type", [""])[0].startswith("application/json"), repro
    body = response.json()
    assert isinstance(body, dict), repro
    assert set(body) == {"error"}, repro
    error = body["error"]
    assert isinstance(error, dict), repro
    assert {"code", "message"} <= set(error) <= {"code", "message", "path"}, repro
    assert error["code"] in STABLE_CODES, f"{error['code']!r} is no ErrorCode: {repro}"
    assert isinstance(error["message"], str), repro
    assert error["message"], repro


def without_long_poll(case: AnyCase) -> AnyCase:
    """``wait`` holds the request up to 60 s when nothing is new: keep it at 0."""
    if case.query and "wait" in case.query:
        value = case.query["wait"]
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 60:
            case.query["wait"] = 0
        elif isinstance(value, str) and value.strip().isdigit() and 0 < int(value) <= 60:
            case.query["wait"] = "0"
    return case


def strategies(
    operation: Operation, principals: Principals, credential: str
) -> st.SearchStrategy[AnyCase]:
    """Positive and negative cases, and for authenticated callers also cases against
    the caller's own conversation (random path ids only ever reach ``not_found``)."""
    modes = [GenerationMode.POSITIVE]
    if operation.path_parameters or operation.query or operation.body or operation.headers:
        modes.append(GenerationMode.NEGATIVE)
    options: list[st.SearchStrategy[AnyCase]] = [operation.as_strategy(mode) for mode in modes]
    owns = credential in ("user", "agent") and any(
        parameter.name == "conversation_id" for parameter in operation.path_parameters
    )
    if owns:
        own = {"conversation_id": principals.conversation_id}
        options += [operation.as_strategy(mode, path_parameters=own) for mode in modes]
        if operation.body:
            # Envelopes that name this conversation and this sender get past the
            # routing checks and reach decoding, validation and storage.
            sender = (
                {"kind": "user", "id": principals.user_id}
                if credential == "user"
                else {"kind": "agent", "id": "fuzz-agent"}
            )
            addressed = operation.as_strategy(GenerationMode.POSITIVE, path_parameters=own)
            options.append(addressed.map(lambda case: addressed_to(case, own, sender)))
    return st.one_of(options).map(without_long_poll)


def addressed_to(case: AnyCase, own: dict[str, str], sender: dict[str, str]) -> AnyCase:
    if isinstance(case.body, dict):
        body: dict[str, Any] = {**case.body, **own, "sender": sender}
        case.body = body
    return case


def credential_header(
    principals: Principals, credential: str, operation: Operation
) -> Callable[[], dict[str, str]]:
    if credential == "user":
        if operation.path == "/v1/logout":
            # Logging out revokes the token: each example logs out a fresh one.
            return lambda: {"Authorization": f"Bearer {principals.fresh_user_token()}"}
        return lambda: {"Authorization": f"Bearer {principals.user_token}"}
    if credential == "agent":
        return lambda: {"Authorization": f"Bearer {principals.agent_key}"}
    if credential == "bogus":
        return lambda: {"Authorization": "Bearer lu_u_not-a-token"}
    return dict


@pytest.mark.parametrize("credential", ["user", "agent", "none", "bogus"])
@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_operation_answers_as_documented_and_never_5xx(
    schema: schemathesis.BaseSchema,
    principals: Principals,
    session: requests.Session,
    method: str,
    path: str,
    credential: str,
) -> None:
    operation = schema[path][method]
    auth = credential_header(principals, credential, operation)
    seen: dict[int, int] = {}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategies(operation, principals, credential))
    def run(case: AnyCase) -> None:
        headers = auth()
        negative = case.meta is not None and case.meta.generation.mode is GenerationMode.NEGATIVE
        if credential != "none" and case.headers:
            # A generated Authorization header would replace the credential under test;
            # without it, a case whose only invalid part it was is no longer negative.
            kept = {k: v for k, v in case.headers.items() if k.lower() != "authorization"}
            negative = negative and len(kept) == len(case.headers)
            case.headers = type(case.headers)(kept)
        checks: list[Any] = list(CHECKS)
        if negative:
            checks.append(negative_data_rejection)
        response = case.call(base_url=principals.url, session=session, headers=headers, timeout=10)
        if operation.path == "/v1/login" and response.status_code == 429:
            # Fuzzed usernames repeat and trip the login throttle; the spec does not
            # list 429 yet (see test_the_login_throttle_answer_is_documented).
            checks.remove(status_code_conformance)
        case.validate_response(response, checks=checks, headers=headers)
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        assert_standard_error(case, response)
        public = ("/healthz", "/readyz", "/v1/login")
        if credential in ("none", "bogus") and operation.path not in public:
            assert response.status_code == 401, case.as_curl_command()

    run()
    assert seen, "no request was sent"


def test_the_login_throttle_answer_is_documented(
    schema: schemathesis.BaseSchema, principals: Principals, session: requests.Session
) -> None:
    operation = schema["/v1/login"]["POST"]
    case = operation.Case(body={"username": "throttled-fuzz", "password": "wrong"})
    statuses = [
        case.call(base_url=principals.url, session=session, timeout=10).status_code
        for _ in range(11)
    ]
    assert statuses == [401] * 10 + [429]
    response = case.call(base_url=principals.url, session=session, timeout=10)
    assert_standard_error(case, response)
    assert response.json()["error"]["code"] == ErrorCode.RATE_LIMITED
    case.validate_response(response, checks=[status_code_conformance])
