"""The API's one error shape, `{"error": code, "message": text, ...}`, and the handlers that give
every refusal that shape. Routers raise `ApiError`; whatever else escapes a route (a framework
404, a body that fails validation, an unexpected exception) is answered here too, so no stack
trace reaches a client and no request body reaches the log."""

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from loguru import logger
from starlette.exceptions import HTTPException as StarletteHTTPException

from service.intake import TooLarge

NOT_FOUND = ("not_found", "no such record")


class ApiError(Exception):
    """A refusal with its status, code and message; `extra` fields join the JSON body."""

    def __init__(self, status: int, code: str, message: str, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def error_response(status: int, code: str, message: str, **extra) -> JSONResponse:
    """The JSON body of a refusal; a 401 names the scheme it wants, as HTTP asks."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status, headers=headers)


def add_handlers(app: FastAPI) -> None:
    """Answer every error raised inside `app` in the shape above."""

    @app.exception_handler(ApiError)
    async def api_error(request: Request, error: ApiError):
        return error_response(error.status, error.code, error.message, **error.extra)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed", 413: TooLarge.code}.get(error.status_code, "http_error")
        return error_response(error.status_code, code, str(error.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        problems = [{"field": ".".join(map(str, e["loc"][1:])), "problem": e["msg"]} for e in error.errors()]
        return error_response(422, "invalid_request", "the request is not valid", problems=problems)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        logger.opt(exception=False).error("request {} {} failed: {}", request.method, request.url.path,
                                          type(error).__name__)
        return error_response(500, "internal", "internal error")
