from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...models.paginated_judgment_out_list import PaginatedJudgmentOutList
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    slug: str,
    *,
    attribute: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    model: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    reviewer: str | Unset = UNSET,
    round_: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["attribute"] = attribute

    params["cursor"] = cursor

    params["model"] = model

    params["page_size"] = page_size

    params["reviewer"] = reviewer

    params["round"] = round_


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/studies/{slug}/judgments/".format(slug=quote(str(slug), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | PaginatedJudgmentOutList | None:
    if response.status_code == 200:
        response_200 = PaginatedJudgmentOutList.from_dict(response.json())



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

    if response.status_code == 429:
        response_429 = ErrorOut.from_dict(response.json())



        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | PaginatedJudgmentOutList]:
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
    attribute: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    model: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    reviewer: str | Unset = UNSET,
    round_: str | Unset = UNSET,

) -> Response[ErrorOut | PaginatedJudgmentOutList]:
    """ Judgments (reviewers: their own only, never gold), filterable, cursor-paginated

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; any role (what you see follows it).

    Args:
        slug (str):
        attribute (str | Unset):
        cursor (str | Unset):
        model (str | Unset):
        page_size (int | Unset):
        reviewer (str | Unset):
        round_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | PaginatedJudgmentOutList]
     """


    kwargs = _get_kwargs(
        slug=slug,
attribute=attribute,
cursor=cursor,
model=model,
page_size=page_size,
reviewer=reviewer,
round_=round_,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    slug: str,
    *,
    client: AuthenticatedClient,
    attribute: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    model: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    reviewer: str | Unset = UNSET,
    round_: str | Unset = UNSET,

) -> ErrorOut | PaginatedJudgmentOutList | None:
    """ Judgments (reviewers: their own only, never gold), filterable, cursor-paginated

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; any role (what you see follows it).

    Args:
        slug (str):
        attribute (str | Unset):
        cursor (str | Unset):
        model (str | Unset):
        page_size (int | Unset):
        reviewer (str | Unset):
        round_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | PaginatedJudgmentOutList
     """


    return sync_detailed(
        slug=slug,
client=client,
attribute=attribute,
cursor=cursor,
model=model,
page_size=page_size,
reviewer=reviewer,
round_=round_,

    ).parsed

async def asyncio_detailed(
    slug: str,
    *,
    client: AuthenticatedClient,
    attribute: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    model: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    reviewer: str | Unset = UNSET,
    round_: str | Unset = UNSET,

) -> Response[ErrorOut | PaginatedJudgmentOutList]:
    """ Judgments (reviewers: their own only, never gold), filterable, cursor-paginated

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; any role (what you see follows it).

    Args:
        slug (str):
        attribute (str | Unset):
        cursor (str | Unset):
        model (str | Unset):
        page_size (int | Unset):
        reviewer (str | Unset):
        round_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | PaginatedJudgmentOutList]
     """


    kwargs = _get_kwargs(
        slug=slug,
attribute=attribute,
cursor=cursor,
model=model,
page_size=page_size,
reviewer=reviewer,
round_=round_,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    slug: str,
    *,
    client: AuthenticatedClient,
    attribute: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    model: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    reviewer: str | Unset = UNSET,
    round_: str | Unset = UNSET,

) -> ErrorOut | PaginatedJudgmentOutList | None:
    """ Judgments (reviewers: their own only, never gold), filterable, cursor-paginated

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; any role (what you see follows it).

    Args:
        slug (str):
        attribute (str | Unset):
        cursor (str | Unset):
        model (str | Unset):
        page_size (int | Unset):
        reviewer (str | Unset):
        round_ (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | PaginatedJudgmentOutList
     """


    return (await asyncio_detailed(
        slug=slug,
client=client,
attribute=attribute,
cursor=cursor,
model=model,
page_size=page_size,
reviewer=reviewer,
round_=round_,

    )).parsed
