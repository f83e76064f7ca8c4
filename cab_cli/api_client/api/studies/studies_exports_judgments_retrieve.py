from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...models.studies_exports_judgments_retrieve_fmt import StudiesExportsJudgmentsRetrieveFmt
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    slug: str,
    fmt: StudiesExportsJudgmentsRetrieveFmt,
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
        "url": "/api/v1/studies/{slug}/exports/judgments.{fmt}".format(slug=quote(str(slug), safe=""),fmt=quote(str(fmt), safe=""),),
    }


    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | str | None:
    if response.status_code == 200:
        response_200 = response.text
        return response_200

    if response.status_code == 206:
        response_206 = response.text
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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | str]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    slug: str,
    fmt: StudiesExportsJudgmentsRetrieveFmt,
    *,
    client: AuthenticatedClient,
    if_range: str | Unset = UNSET,
    range_: str | Unset = UNSET,

) -> Response[ErrorOut | str]:
    """ Download all of a study's judgments (admins and researchers); resumable

     The whole file with its length and ETag; a `Range` (with `If-Range`: the ETag) resumes an
    interrupted download (docs/api.md#resuming-a-download).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        fmt (StudiesExportsJudgmentsRetrieveFmt):
        if_range (str | Unset):
        range_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | str]
     """


    kwargs = _get_kwargs(
        slug=slug,
fmt=fmt,
if_range=if_range,
range_=range_,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    slug: str,
    fmt: StudiesExportsJudgmentsRetrieveFmt,
    *,
    client: AuthenticatedClient,
    if_range: str | Unset = UNSET,
    range_: str | Unset = UNSET,

) -> ErrorOut | str | None:
    """ Download all of a study's judgments (admins and researchers); resumable

     The whole file with its length and ETag; a `Range` (with `If-Range`: the ETag) resumes an
    interrupted download (docs/api.md#resuming-a-download).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        fmt (StudiesExportsJudgmentsRetrieveFmt):
        if_range (str | Unset):
        range_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | str
     """


    return sync_detailed(
        slug=slug,
fmt=fmt,
client=client,
if_range=if_range,
range_=range_,

    ).parsed

async def asyncio_detailed(
    slug: str,
    fmt: StudiesExportsJudgmentsRetrieveFmt,
    *,
    client: AuthenticatedClient,
    if_range: str | Unset = UNSET,
    range_: str | Unset = UNSET,

) -> Response[ErrorOut | str]:
    """ Download all of a study's judgments (admins and researchers); resumable

     The whole file with its length and ETag; a `Range` (with `If-Range`: the ETag) resumes an
    interrupted download (docs/api.md#resuming-a-download).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        fmt (StudiesExportsJudgmentsRetrieveFmt):
        if_range (str | Unset):
        range_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | str]
     """


    kwargs = _get_kwargs(
        slug=slug,
fmt=fmt,
if_range=if_range,
range_=range_,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    slug: str,
    fmt: StudiesExportsJudgmentsRetrieveFmt,
    *,
    client: AuthenticatedClient,
    if_range: str | Unset = UNSET,
    range_: str | Unset = UNSET,

) -> ErrorOut | str | None:
    """ Download all of a study's judgments (admins and researchers); resumable

     The whole file with its length and ETag; a `Range` (with `If-Range`: the ETag) resumes an
    interrupted download (docs/api.md#resuming-a-download).

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        fmt (StudiesExportsJudgmentsRetrieveFmt):
        if_range (str | Unset):
        range_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | str
     """


    return (await asyncio_detailed(
        slug=slug,
fmt=fmt,
client=client,
if_range=if_range,
range_=range_,

    )).parsed
