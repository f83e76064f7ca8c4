from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...models.paginated_response_item_out_list import PaginatedResponseItemOutList
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    slug: str,
    *,
    conversation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    dataset: str | Unset = UNSET,
    model: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    turn_index: int | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["conversation_id"] = conversation_id

    params["cursor"] = cursor

    params["dataset"] = dataset

    params["model"] = model

    params["page_size"] = page_size

    params["turn_index"] = turn_index


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/studies/{slug}/responses/".format(slug=quote(str(slug), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | PaginatedResponseItemOutList | None:
    if response.status_code == 200:
        response_200 = PaginatedResponseItemOutList.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | PaginatedResponseItemOutList]:
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
    conversation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    dataset: str | Unset = UNSET,
    model: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    turn_index: int | Unset = UNSET,

) -> Response[ErrorOut | PaginatedResponseItemOutList]:
    """ A study's model responses with their texts, filterable, cursor-paginated

     The responses of the study's conversations (as `GET …/conversations/`) under its model slots, in the
    shape they are ingested in.

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        conversation_id (str | Unset):
        cursor (str | Unset):
        dataset (str | Unset):
        model (str | Unset):
        page_size (int | Unset):
        turn_index (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | PaginatedResponseItemOutList]
     """


    kwargs = _get_kwargs(
        slug=slug,
conversation_id=conversation_id,
cursor=cursor,
dataset=dataset,
model=model,
page_size=page_size,
turn_index=turn_index,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    slug: str,
    *,
    client: AuthenticatedClient,
    conversation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    dataset: str | Unset = UNSET,
    model: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    turn_index: int | Unset = UNSET,

) -> ErrorOut | PaginatedResponseItemOutList | None:
    """ A study's model responses with their texts, filterable, cursor-paginated

     The responses of the study's conversations (as `GET …/conversations/`) under its model slots, in the
    shape they are ingested in.

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        conversation_id (str | Unset):
        cursor (str | Unset):
        dataset (str | Unset):
        model (str | Unset):
        page_size (int | Unset):
        turn_index (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | PaginatedResponseItemOutList
     """


    return sync_detailed(
        slug=slug,
client=client,
conversation_id=conversation_id,
cursor=cursor,
dataset=dataset,
model=model,
page_size=page_size,
turn_index=turn_index,

    ).parsed

async def asyncio_detailed(
    slug: str,
    *,
    client: AuthenticatedClient,
    conversation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    dataset: str | Unset = UNSET,
    model: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    turn_index: int | Unset = UNSET,

) -> Response[ErrorOut | PaginatedResponseItemOutList]:
    """ A study's model responses with their texts, filterable, cursor-paginated

     The responses of the study's conversations (as `GET …/conversations/`) under its model slots, in the
    shape they are ingested in.

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        conversation_id (str | Unset):
        cursor (str | Unset):
        dataset (str | Unset):
        model (str | Unset):
        page_size (int | Unset):
        turn_index (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | PaginatedResponseItemOutList]
     """


    kwargs = _get_kwargs(
        slug=slug,
conversation_id=conversation_id,
cursor=cursor,
dataset=dataset,
model=model,
page_size=page_size,
turn_index=turn_index,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    slug: str,
    *,
    client: AuthenticatedClient,
    conversation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    dataset: str | Unset = UNSET,
    model: str | Unset = UNSET,
    page_size: int | Unset = UNSET,
    turn_index: int | Unset = UNSET,

) -> ErrorOut | PaginatedResponseItemOutList | None:
    """ A study's model responses with their texts, filterable, cursor-paginated

     The responses of the study's conversations (as `GET …/conversations/`) under its model slots, in the
    shape they are ingested in.

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        conversation_id (str | Unset):
        cursor (str | Unset):
        dataset (str | Unset):
        model (str | Unset):
        page_size (int | Unset):
        turn_index (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | PaginatedResponseItemOutList
     """


    return (await asyncio_detailed(
        slug=slug,
client=client,
conversation_id=conversation_id,
cursor=cursor,
dataset=dataset,
model=model,
page_size=page_size,
turn_index=turn_index,

    )).parsed
