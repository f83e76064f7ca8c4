from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...models.metric_run_in_request import MetricRunInRequest
from ...models.metric_run_out import MetricRunOut
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    slug: str,
    *,
    body: MetricRunInRequest | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(idempotency_key, Unset):
        headers["Idempotency-Key"] = idempotency_key



    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/studies/{slug}/metric-runs/".format(slug=quote(str(slug), safe=""),),
    }

    
    if not isinstance(body, Unset):
        _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | MetricRunOut | None:
    if response.status_code == 202:
        response_202 = MetricRunOut.from_dict(response.json())



        return response_202

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | MetricRunOut]:
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
    body: MetricRunInRequest | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,

) -> Response[ErrorOut | MetricRunOut]:
    """ Start a metric run (computed by a worker; poll it)

     With an Idempotency-Key, a resend after a lost answer makes no second run: it is answered with the
    run the first made.

    **Needs** a token with the `metrics` scope (a token limited to one study reaches that study only),
    or a signed-in session; admins and researchers only.

    Args:
        slug (str):
        idempotency_key (str | Unset):
        body (MetricRunInRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | MetricRunOut]
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
    body: MetricRunInRequest | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,

) -> ErrorOut | MetricRunOut | None:
    """ Start a metric run (computed by a worker; poll it)

     With an Idempotency-Key, a resend after a lost answer makes no second run: it is answered with the
    run the first made.

    **Needs** a token with the `metrics` scope (a token limited to one study reaches that study only),
    or a signed-in session; admins and researchers only.

    Args:
        slug (str):
        idempotency_key (str | Unset):
        body (MetricRunInRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | MetricRunOut
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
    body: MetricRunInRequest | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,

) -> Response[ErrorOut | MetricRunOut]:
    """ Start a metric run (computed by a worker; poll it)

     With an Idempotency-Key, a resend after a lost answer makes no second run: it is answered with the
    run the first made.

    **Needs** a token with the `metrics` scope (a token limited to one study reaches that study only),
    or a signed-in session; admins and researchers only.

    Args:
        slug (str):
        idempotency_key (str | Unset):
        body (MetricRunInRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | MetricRunOut]
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
    body: MetricRunInRequest | Unset = UNSET,
    idempotency_key: str | Unset = UNSET,

) -> ErrorOut | MetricRunOut | None:
    """ Start a metric run (computed by a worker; poll it)

     With an Idempotency-Key, a resend after a lost answer makes no second run: it is answered with the
    run the first made.

    **Needs** a token with the `metrics` scope (a token limited to one study reaches that study only),
    or a signed-in session; admins and researchers only.

    Args:
        slug (str):
        idempotency_key (str | Unset):
        body (MetricRunInRequest | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | MetricRunOut
     """


    return (await asyncio_detailed(
        slug=slug,
client=client,
body=body,
idempotency_key=idempotency_key,

    )).parsed
