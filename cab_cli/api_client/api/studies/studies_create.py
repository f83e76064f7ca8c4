from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_out import ErrorOut
from ...models.study_in_request import StudyInRequest
from ...models.study_out import StudyOut
from typing import cast



def _get_kwargs(
    *,
    body: StudyInRequest,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/api/v1/studies/",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorOut | StudyOut | None:
    if response.status_code == 201:
        response_201 = StudyOut.from_dict(response.json())



        return response_201

    if response.status_code == 400:
        response_400 = ErrorOut.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorOut.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = ErrorOut.from_dict(response.json())



        return response_403

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

    if response.status_code == 429:
        response_429 = ErrorOut.from_dict(response.json())



        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorOut | StudyOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    body: StudyInRequest,

) -> Response[ErrorOut | StudyOut]:
    """ Create a study in set-up (admins): the New study form's fields, checks and messages

     The same form, service and audit event as the admin's *New study* page and `manage.py create_study`.
    A refused study → 400 naming each field and why (`fields`), a slug in use → 409; nothing is written
    then. A token limited to one study cannot create another (403).

    **Needs** a token with the `setup` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        body (StudyInRequest): A new study: the admin's New study form as a script fills it in
            (``annotation.forms.StudyScriptForm``).
            Only JSON types are checked here; what a value may be is the form's rule, refused in the
            form's words. A
            setting left out has the form's default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | StudyOut]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient,
    body: StudyInRequest,

) -> ErrorOut | StudyOut | None:
    """ Create a study in set-up (admins): the New study form's fields, checks and messages

     The same form, service and audit event as the admin's *New study* page and `manage.py create_study`.
    A refused study → 400 naming each field and why (`fields`), a slug in use → 409; nothing is written
    then. A token limited to one study cannot create another (403).

    **Needs** a token with the `setup` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        body (StudyInRequest): A new study: the admin's New study form as a script fills it in
            (``annotation.forms.StudyScriptForm``).
            Only JSON types are checked here; what a value may be is the form's rule, refused in the
            form's words. A
            setting left out has the form's default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | StudyOut
     """


    return sync_detailed(
        client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    body: StudyInRequest,

) -> Response[ErrorOut | StudyOut]:
    """ Create a study in set-up (admins): the New study form's fields, checks and messages

     The same form, service and audit event as the admin's *New study* page and `manage.py create_study`.
    A refused study → 400 naming each field and why (`fields`), a slug in use → 409; nothing is written
    then. A token limited to one study cannot create another (403).

    **Needs** a token with the `setup` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        body (StudyInRequest): A new study: the admin's New study form as a script fills it in
            (``annotation.forms.StudyScriptForm``).
            Only JSON types are checked here; what a value may be is the form's rule, refused in the
            form's words. A
            setting left out has the form's default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorOut | StudyOut]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient,
    body: StudyInRequest,

) -> ErrorOut | StudyOut | None:
    """ Create a study in set-up (admins): the New study form's fields, checks and messages

     The same form, service and audit event as the admin's *New study* page and `manage.py create_study`.
    A refused study → 400 naming each field and why (`fields`), a slug in use → 409; nothing is written
    then. A token limited to one study cannot create another (403).

    **Needs** a token with the `setup` scope (a token limited to one study reaches that study only), or
    a signed-in session; admins only.

    Args:
        body (StudyInRequest): A new study: the admin's New study form as a script fills it in
            (``annotation.forms.StudyScriptForm``).
            Only JSON types are checked here; what a value may be is the form's rule, refused in the
            form's words. A
            setting left out has the form's default.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorOut | StudyOut
     """


    return (await asyncio_detailed(
        client=client,
body=body,

    )).parsed
