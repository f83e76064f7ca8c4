from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...types import File, FileTypes
from ...types import UNSET, Unset
from io import BytesIO
from typing import cast



def _get_kwargs(
    run_id: int,
    *,
    if_range: str | Unset = UNSET,
    range_: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(if_range, Unset):
        headers["If-Range"] = if_range

    if not isinstance(range_, Unset):
        headers["Range"] = range_



    

    

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/metric-runs/{run_id}/bundle.zip".format(run_id=quote(str(run_id), safe=""),),
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | File | None:
    if response.status_code == 200:
        response_200 = File(
             payload = BytesIO(response.content)
        )



        return response_200

    if response.status_code == 206:
        response_206 = File(
             payload = BytesIO(response.content)
        )



        return response_206

    if response.status_code == 401:
        response_401 = ErrorOut.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = ErrorOut.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = ErrorOut.from_dict(response.json())



        return response_404

    if response.status_code == 409:
        response_409 = ErrorOut.from_dict(response.json())



        return response_409

    if response.status_code == 416:
        response_416 = ErrorOut.from_dict(response.json())



        return response_416

    if response.status_code == 429:
        response_429 = ErrorOut.from_dict(response.json())



        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | File]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    run_id: int,
    *,
    client: AuthenticatedClient,
    if_range: str | Unset = UNSET,
    range_: str | Unset = UNSET,

) -> Response[ErrorOut | File]:
    """ Download the study bundle of a succeeded run: data, gold, report, figures, tables, datapackage.json

     A zip built once per run (the first download may take a while at paper scale), the same bytes every
    time; resume an interrupted download with `Range` and `If-Range`. `409` for a run that has not
    succeeded, or whose study's judgments changed since it read them (start a new run).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        run_id (int):
        if_range (str | Unset):
        range_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | File]
     """


    kwargs = _get_kwargs(
        run_id=run_id,
if_range=if_range,
range_=range_,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    run_id: int,
    *,
    client: AuthenticatedClient,
    if_range: str | Unset = UNSET,
    range_: str | Unset = UNSET,

) -> ErrorOut | File | None:
    """ Download the study bundle of a succeeded run: data, gold, report, figures, tables, datapackage.json

     A zip built once per run (the first download may take a while at paper scale), the same bytes every
    time; resume an interrupted download with `Range` and `If-Range`. `409` for a run that has not
    succeeded, or whose study's judgments changed since it read them (start a new run).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        run_id (int):
        if_range (str | Unset):
        range_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | File
     """


    return sync_detailed(
        run_id=run_id,
client=client,
if_range=if_range,
range_=range_,

    ).parsed

async def asyncio_detailed(
    run_id: int,
    *,
    client: AuthenticatedClient,
    if_range: str | Unset = UNSET,
    range_: str | Unset = UNSET,

) -> Response[ErrorOut | File]:
    """ Download the study bundle of a succeeded run: data, gold, report, figures, tables, datapackage.json

     A zip built once per run (the first download may take a while at paper scale), the same bytes every
    time; resume an interrupted download with `Range` and `If-Range`. `409` for a run that has not
    succeeded, or whose study's judgments changed since it read them (start a new run).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        run_id (int):
        if_range (str | Unset):
        range_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | File]
     """


    kwargs = _get_kwargs(
        run_id=run_id,
if_range=if_range,
range_=range_,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    run_id: int,
    *,
    client: AuthenticatedClient,
    if_range: str | Unset = UNSET,
    range_: str | Unset = UNSET,

) -> ErrorOut | File | None:
    """ Download the study bundle of a succeeded run: data, gold, report, figures, tables, datapackage.json

     A zip built once per run (the first download may take a while at paper scale), the same bytes every
    time; resume an interrupted download with `Range` and `If-Range`. `409` for a run that has not
    succeeded, or whose study's judgments changed since it read them (start a new run).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        run_id (int):
        if_range (str | Unset):
        range_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | File
     """


    return (await asyncio_detailed(
        run_id=run_id,
client=client,
if_range=if_range,
range_=range_,

    )).parsed
