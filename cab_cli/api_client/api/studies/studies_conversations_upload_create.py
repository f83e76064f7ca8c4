from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.conversations_ingest_out import ConversationsIngestOut
from ...models.error_out import ErrorOut
from ...models.items_file_in_request import ItemsFileInRequest
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    slug: str,
    *,
    body: ItemsFileInRequest,
    idempotency_key: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key



    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/studies/{slug}/conversations/upload/".format(slug=quote(str(slug), safe=""),),
    }

    _kwargs["files"] = body.to_multipart()

    headers["Content-Type"] = "multipart/form-data; boundary=+++"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ConversationsIngestOut | ErrorOut | None:
    if response.status_code == 200:
        response_200 = ConversationsIngestOut.from_dict(response.json())



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

    if response.status_code == 409:
        response_409 = ErrorOut.from_dict(response.json())



        return response_409

    if response.status_code == 413:
        response_413 = ErrorOut.from_dict(response.json())



        return response_413

    if response.status_code == 415:
        response_415 = ErrorOut.from_dict(response.json())



        return response_415

    if response.status_code == 422:
        response_422 = ErrorOut.from_dict(response.json())



        return response_422

    if response.status_code == 429:
        response_429 = ErrorOut.from_dict(response.json())



        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ConversationsIngestOut | ErrorOut]:
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
    body: ItemsFileInRequest,
    idempotency_key: str | Unset = UNSET,

) -> Response[ConversationsIngestOut | ErrorOut]:
    """ Ingest conversations from a file (JSON Lines or a JSON array) sent as a form upload

     The items as a file, sent as a form upload (`multipart/form-data`, the part `file`): JSON Lines, one
    item a line, or a JSON array. Everything else is as for the JSON body of this path without
    `upload/`.

    **Needs** a token with the `ingest` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        slug (str):
        idempotency_key (str | Unset):
        body (ItemsFileInRequest): The items as a file, for clients that send files as a form
            upload (``multipart/form-data``).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConversationsIngestOut | ErrorOut]
     """


    kwargs = _get_kwargs(
        slug=slug,
body=body,
idempotency_key=idempotency_key,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: ItemsFileInRequest,
    idempotency_key: str | Unset = UNSET,

) -> ConversationsIngestOut | ErrorOut | None:
    """ Ingest conversations from a file (JSON Lines or a JSON array) sent as a form upload

     The items as a file, sent as a form upload (`multipart/form-data`, the part `file`): JSON Lines, one
    item a line, or a JSON array. Everything else is as for the JSON body of this path without
    `upload/`.

    **Needs** a token with the `ingest` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        slug (str):
        idempotency_key (str | Unset):
        body (ItemsFileInRequest): The items as a file, for clients that send files as a form
            upload (``multipart/form-data``).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConversationsIngestOut | ErrorOut
     """


    return sync_detailed(
        slug=slug,
client=client,
body=body,
idempotency_key=idempotency_key,

    ).parsed

async def asyncio_detailed(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: ItemsFileInRequest,
    idempotency_key: str | Unset = UNSET,

) -> Response[ConversationsIngestOut | ErrorOut]:
    """ Ingest conversations from a file (JSON Lines or a JSON array) sent as a form upload

     The items as a file, sent as a form upload (`multipart/form-data`, the part `file`): JSON Lines, one
    item a line, or a JSON array. Everything else is as for the JSON body of this path without
    `upload/`.

    **Needs** a token with the `ingest` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        slug (str):
        idempotency_key (str | Unset):
        body (ItemsFileInRequest): The items as a file, for clients that send files as a form
            upload (``multipart/form-data``).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ConversationsIngestOut | ErrorOut]
     """


    kwargs = _get_kwargs(
        slug=slug,
body=body,
idempotency_key=idempotency_key,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    slug: str,
    *,
    client: AuthenticatedClient,
    body: ItemsFileInRequest,
    idempotency_key: str | Unset = UNSET,

) -> ConversationsIngestOut | ErrorOut | None:
    """ Ingest conversations from a file (JSON Lines or a JSON array) sent as a form upload

     The items as a file, sent as a form upload (`multipart/form-data`, the part `file`): JSON Lines, one
    item a line, or a JSON array. Everything else is as for the JSON body of this path without
    `upload/`.

    **Needs** a token with the `ingest` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        slug (str):
        idempotency_key (str | Unset):
        body (ItemsFileInRequest): The items as a file, for clients that send files as a form
            upload (``multipart/form-data``).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ConversationsIngestOut | ErrorOut
     """


    return (await asyncio_detailed(
        slug=slug,
client=client,
body=body,
idempotency_key=idempotency_key,

    )).parsed
