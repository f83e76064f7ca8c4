from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...models.paginated_metric_run_out_list import PaginatedMetricRunOutList
from ...models.studies_metric_runs_list_status import StudiesMetricRunsListStatus
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    slug: str,
    *,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    status: StudiesMetricRunsListStatus | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["cursor"] = cursor

    params["page_size"] = page_size

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/studies/{slug}/metric-runs/".format(slug=quote(str(slug), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | PaginatedMetricRunOutList | None:
    if response.status_code == 200:
        response_200 = PaginatedMetricRunOutList.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | PaginatedMetricRunOutList]:
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
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    status: StudiesMetricRunsListStatus | Unset = UNSET,

) -> Response[ErrorOut | PaginatedMetricRunOutList]:
    """ A study's metric runs, newest first, cursor-paginated (?page_size= at most 1000, default 100; follow
    next)

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        cursor (str | Unset):
        page_size (int | Unset):
        status (StudiesMetricRunsListStatus | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | PaginatedMetricRunOutList]
     """


    kwargs = _get_kwargs(
        slug=slug,
cursor=cursor,
page_size=page_size,
status=status,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    slug: str,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    status: StudiesMetricRunsListStatus | Unset = UNSET,

) -> ErrorOut | PaginatedMetricRunOutList | None:
    """ A study's metric runs, newest first, cursor-paginated (?page_size= at most 1000, default 100; follow
    next)

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        cursor (str | Unset):
        page_size (int | Unset):
        status (StudiesMetricRunsListStatus | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | PaginatedMetricRunOutList
     """


    return sync_detailed(
        slug=slug,
client=client,
cursor=cursor,
page_size=page_size,
status=status,

    ).parsed

async def asyncio_detailed(
    slug: str,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    status: StudiesMetricRunsListStatus | Unset = UNSET,

) -> Response[ErrorOut | PaginatedMetricRunOutList]:
    """ A study's metric runs, newest first, cursor-paginated (?page_size= at most 1000, default 100; follow
    next)

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        cursor (str | Unset):
        page_size (int | Unset):
        status (StudiesMetricRunsListStatus | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | PaginatedMetricRunOutList]
     """


    kwargs = _get_kwargs(
        slug=slug,
cursor=cursor,
page_size=page_size,
status=status,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    slug: str,
    *,
    client: AuthenticatedClient,
    cursor: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    status: StudiesMetricRunsListStatus | Unset = UNSET,

) -> ErrorOut | PaginatedMetricRunOutList | None:
    """ A study's metric runs, newest first, cursor-paginated (?page_size= at most 1000, default 100; follow
    next)

     **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        cursor (str | Unset):
        page_size (int | Unset):
        status (StudiesMetricRunsListStatus | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | PaginatedMetricRunOutList
     """


    return (await asyncio_detailed(
        slug=slug,
client=client,
cursor=cursor,
page_size=page_size,
status=status,

    )).parsed
