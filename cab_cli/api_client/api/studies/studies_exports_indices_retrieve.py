from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    slug: str,
    table: str,
    *,
    run: int | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["run"] = run


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/studies/{slug}/exports/indices/{table}.csv".format(slug=quote(str(slug), safe=""),table=quote(str(table), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | str | None:
    if response.status_code == 200:
        response_200 = response.text
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

    if response.status_code == 429:
        response_429 = ErrorOut.from_dict(response.json())



        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | str]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    slug: str,
    table: str,
    *,
    client: AuthenticatedClient,
    run: int | Unset = UNSET,

) -> Response[ErrorOut | str]:
    """ Download one per-model index table (flags, ari, attribute_risk, fingerprint …) as CSV

     Downloads answer in their own format whatever the Accept header says (errors are still JSON).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        table (str):
        run (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | str]
     """


    kwargs = _get_kwargs(
        slug=slug,
table=table,
run=run,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    slug: str,
    table: str,
    *,
    client: AuthenticatedClient,
    run: int | Unset = UNSET,

) -> ErrorOut | str | None:
    """ Download one per-model index table (flags, ari, attribute_risk, fingerprint …) as CSV

     Downloads answer in their own format whatever the Accept header says (errors are still JSON).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        table (str):
        run (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | str
     """


    return sync_detailed(
        slug=slug,
table=table,
client=client,
run=run,

    ).parsed

async def asyncio_detailed(
    slug: str,
    table: str,
    *,
    client: AuthenticatedClient,
    run: int | Unset = UNSET,

) -> Response[ErrorOut | str]:
    """ Download one per-model index table (flags, ari, attribute_risk, fingerprint …) as CSV

     Downloads answer in their own format whatever the Accept header says (errors are still JSON).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        table (str):
        run (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | str]
     """


    kwargs = _get_kwargs(
        slug=slug,
table=table,
run=run,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    slug: str,
    table: str,
    *,
    client: AuthenticatedClient,
    run: int | Unset = UNSET,

) -> ErrorOut | str | None:
    """ Download one per-model index table (flags, ari, attribute_risk, fingerprint …) as CSV

     Downloads answer in their own format whatever the Accept header says (errors are still JSON).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        table (str):
        run (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | str
     """


    return (await asyncio_detailed(
        slug=slug,
table=table,
client=client,
run=run,

    )).parsed
