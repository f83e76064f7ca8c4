from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...models.paginated_conversation_out_list import PaginatedConversationOutList
from ...models.studies_conversations_list_kind import StudiesConversationsListKind
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    slug: str,
    *,
    conversation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    dataset: str | Unset = UNSET,
    kind: StudiesConversationsListKind | Unset = UNSET,
    page_size: int | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["conversation_id"] = conversation_id

    params["cursor"] = cursor

    params["dataset"] = dataset

    json_kind: str | Unset = UNSET
    if not isinstance(kind, Unset):
        json_kind = kind.value

    params["kind"] = json_kind

    params["page_size"] = page_size


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/api/v1/studies/{slug}/conversations/".format(slug=quote(str(slug), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | PaginatedConversationOutList | None:
    if response.status_code == 200:
        response_200 = PaginatedConversationOutList.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | PaginatedConversationOutList]:
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
    kind: StudiesConversationsListKind | Unset = UNSET,
    page_size: int | Unset = UNSET,

) -> Response[ErrorOut | PaginatedConversationOutList]:
    """ A study's conversations with their turns' and responses' texts, cursor-paginated

     The study's conversations: those it ingested first and those it has in a round, judged or labelled;
    the responses of its model slots. `?dataset=&conversation_id=` names one.

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        conversation_id (str | Unset):
        cursor (str | Unset):
        dataset (str | Unset):
        kind (StudiesConversationsListKind | Unset):
        page_size (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | PaginatedConversationOutList]
     """


    kwargs = _get_kwargs(
        slug=slug,
conversation_id=conversation_id,
cursor=cursor,
dataset=dataset,
kind=kind,
page_size=page_size,

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
    kind: StudiesConversationsListKind | Unset = UNSET,
    page_size: int | Unset = UNSET,

) -> ErrorOut | PaginatedConversationOutList | None:
    """ A study's conversations with their turns' and responses' texts, cursor-paginated

     The study's conversations: those it ingested first and those it has in a round, judged or labelled;
    the responses of its model slots. `?dataset=&conversation_id=` names one.

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        conversation_id (str | Unset):
        cursor (str | Unset):
        dataset (str | Unset):
        kind (StudiesConversationsListKind | Unset):
        page_size (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | PaginatedConversationOutList
     """


    return sync_detailed(
        slug=slug,
client=client,
conversation_id=conversation_id,
cursor=cursor,
dataset=dataset,
kind=kind,
page_size=page_size,

    ).parsed

async def asyncio_detailed(
    slug: str,
    *,
    client: AuthenticatedClient,
    conversation_id: str | Unset = UNSET,
    cursor: str | Unset = UNSET,
    dataset: str | Unset = UNSET,
    kind: StudiesConversationsListKind | Unset = UNSET,
    page_size: int | Unset = UNSET,

) -> Response[ErrorOut | PaginatedConversationOutList]:
    """ A study's conversations with their turns' and responses' texts, cursor-paginated

     The study's conversations: those it ingested first and those it has in a round, judged or labelled;
    the responses of its model slots. `?dataset=&conversation_id=` names one.

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        conversation_id (str | Unset):
        cursor (str | Unset):
        dataset (str | Unset):
        kind (StudiesConversationsListKind | Unset):
        page_size (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | PaginatedConversationOutList]
     """


    kwargs = _get_kwargs(
        slug=slug,
conversation_id=conversation_id,
cursor=cursor,
dataset=dataset,
kind=kind,
page_size=page_size,

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
    kind: StudiesConversationsListKind | Unset = UNSET,
    page_size: int | Unset = UNSET,

) -> ErrorOut | PaginatedConversationOutList | None:
    """ A study's conversations with their turns' and responses' texts, cursor-paginated

     The study's conversations: those it ingested first and those it has in a round, judged or labelled;
    the responses of its model slots. `?dataset=&conversation_id=` names one.

    **Needs** a token with the `read` scope (a token limited to one study reaches that study only), or a
    signed-in session; admins and researchers only.

    Args:
        slug (str):
        conversation_id (str | Unset):
        cursor (str | Unset):
        dataset (str | Unset):
        kind (StudiesConversationsListKind | Unset):
        page_size (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | PaginatedConversationOutList
     """


    return (await asyncio_detailed(
        slug=slug,
client=client,
conversation_id=conversation_id,
cursor=cursor,
dataset=dataset,
kind=kind,
page_size=page_size,

    )).parsed
