"""Issue 16's peer: the validated echo on FastAPI + uvicorn, one process, the access log off.

    python3 bench/overhead/fastapi_echo.py <port>
"""
import sys

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel, conint, constr

app = FastAPI()


class EchoRequest(BaseModel):
    text: constr(max_length=2000)
    n: conint(ge=0, le=100)


class EchoResponse(BaseModel):
    text: str
    n: int


@app.post("/echo", response_model=EchoResponse)
async def echo(request: EchoRequest) -> EchoResponse:
    return EchoResponse(text=request.text.upper(), n=request.n + 1)


@app.get("/ready")
async def ready():
    return {"status": "ready"}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=False, log_level="warning")
