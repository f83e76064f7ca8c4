from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...models.paginated_assignment_out_list import PaginatedAssignmentOutList
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    slug: str,
    round_name: str,
    *,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    reviewer: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["cursor"] = cursor

    params["page_size"] = page_size

    params["reviewer"] = reviewer


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/studies/{slug}/rounds/{round_name}/assignments/".format(slug=quote(str(slug), safe=""),round_name=quote(str(round_name), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | PaginatedAssignmentOutList | None:
    if response.status_code == 200:
        response_200 = PaginatedAssignmentOutList.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | PaginatedAssignmentOutList]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    slug: str,
    round_name: str,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    reviewer: str | Unset = UNSET,

) -> Response[ErrorOut | PaginatedAssignmentOutList]:
    """ Assignments of a round (reviewers: their own), cursor-paginated

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; any role (what you see follows it).

    Args:
        slug (str):
        round_name (str):
        cursor (str | Unset):
        page_size (int | Unset):
        reviewer (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | PaginatedAssignmentOutList]
     """


    kwargs = _get_kwargs(
        slug=slug,
round_name=round_name,
cursor=cursor,
page_size=page_size,
reviewer=reviewer,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    slug: str,
    round_name: str,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    reviewer: str | Unset = UNSET,

) -> ErrorOut | PaginatedAssignmentOutList | None:
    """ Assignments of a round (reviewers: their own), cursor-paginated

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; any role (what you see follows it).

    Args:
        slug (str):
        round_name (str):
        cursor (str | Unset):
        page_size (int | Unset):
        reviewer (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | PaginatedAssignmentOutList
     """


    return sync_detailed(
        slug=slug,
round_name=round_name,
client=client,
cursor=cursor,
page_size=page_size,
reviewer=reviewer,

    ).parsed

async def asyncio_detailed(
    slug: str,
    round_name: str,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    reviewer: str | Unset = UNSET,

) -> Response[ErrorOut | PaginatedAssignmentOutList]:
    """ Assignments of a round (reviewers: their own), cursor-paginated

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; any role (what you see follows it).

    Args:
        slug (str):
        round_name (str):
        cursor (str | Unset):
        page_size (int | Unset):
        reviewer (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | PaginatedAssignmentOutList]
     """


    kwargs = _get_kwargs(
        slug=slug,
round_name=round_name,
cursor=cursor,
page_size=page_size,
reviewer=reviewer,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    slug: str,
    round_name: str,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    reviewer: str | Unset = UNSET,

) -> ErrorOut | PaginatedAssignmentOutList | None:
    """ Assignments of a round (reviewers: their own), cursor-paginated

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; any role (what you see follows it).

    Args:
        slug (str):
        round_name (str):
        cursor (str | Unset):
        page_size (int | Unset):
        reviewer (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | PaginatedAssignmentOutList
     """


    return (await asyncio_detailed(
        slug=slug,
round_name=round_name,
client=client,
cursor=cursor,
page_size=page_size,
reviewer=reviewer,

    )).parsed
