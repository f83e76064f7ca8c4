from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...models.reference_in_request import ReferenceInRequest
from ...models.reference_out import ReferenceOut
from typing import cast



def _get_kwargs(
    slug: str,
    *,
    body: ReferenceInRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/studies/{slug}/references/".format(slug=quote(str(slug), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | ReferenceOut | None:
    if response.status_code == 200:
        response_200 = ReferenceOut.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ErrorOut.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorOut.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = ErrorOut.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = ErrorOut.from_dict(response.json())



        return response_404

    if response.status_code == 406:
        response_406 = ErrorOut.from_dict(response.json())



        return response_406

    if response.status_code == 413:
        response_413 = ErrorOut.from_dict(response.json())



        return response_413

    if response.status_code == 415:
        response_415 = ErrorOut.from_dict(response.json())



        return response_415

    if response.status_code == 429:
        response_429 = ErrorOut.from_dict(response.json())



        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | ReferenceOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: ReferenceInRequest,

) -> Response[ErrorOut | ReferenceOut]:
    """ Register a reference coder (the source of a study's reference labels) (idempotent)

     A study's reference coders (docs/sessions.md#coders-methods-and-reference-coders): whose session
    labels every
    rater and method is measured against (e.g. the controlled PHQ-8 state), registered here before their
    labels arrive
    (``session-labels/``).

    **Needs** a token with the `import` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        slug (str):
        body (ReferenceInRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | ReferenceOut]
     """


    kwargs = _get_kwargs(
        slug=slug,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: ReferenceInRequest,

) -> ErrorOut | ReferenceOut | None:
    """ Register a reference coder (the source of a study's reference labels) (idempotent)

     A study's reference coders (docs/sessions.md#coders-methods-and-reference-coders): whose session
    labels every
    rater and method is measured against (e.g. the controlled PHQ-8 state), registered here before their
    labels arrive
    (``session-labels/``).

    **Needs** a token with the `import` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        slug (str):
        body (ReferenceInRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | ReferenceOut
     """


    return sync_detailed(
        slug=slug,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: ReferenceInRequest,

) -> Response[ErrorOut | ReferenceOut]:
    """ Register a reference coder (the source of a study's reference labels) (idempotent)

     A study's reference coders (docs/sessions.md#coders-methods-and-reference-coders): whose session
    labels every
    rater and method is measured against (e.g. the controlled PHQ-8 state), registered here before their
    labels arrive
    (``session-labels/``).

    **Needs** a token with the `import` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        slug (str):
        body (ReferenceInRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | ReferenceOut]
     """


    kwargs = _get_kwargs(
        slug=slug,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: ReferenceInRequest,

) -> ErrorOut | ReferenceOut | None:
    """ Register a reference coder (the source of a study's reference labels) (idempotent)

     A study's reference coders (docs/sessions.md#coders-methods-and-reference-coders): whose session
    labels every
    rater and method is measured against (e.g. the controlled PHQ-8 state), registered here before their
    labels arrive
    (``session-labels/``).

    **Needs** a token with the `import` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        slug (str):
        body (ReferenceInRequest):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | ReferenceOut
     """


    return (await asyncio_detailed(
        slug=slug,
client=client,
body=body,

    )).parsed
