"""``GET /health``, ``/metadata`` and ``/schema``: what a client reads before it plays."""

from __future__ import annotations

from fastapi import APIRouter

from envkit.server.bodies import HealthResponse, MetadataResponse, SchemaResponse
from envkit.server.schema_docs import without_examples
from envkit.server.service import Service

__all__ = ["router"]

router = APIRouter(tags=["Environment Info"])


@router.get("/health", response_model=HealthResponse, summary="Health check")
async def health() -> HealthResponse:
    return HealthResponse()


@router.get("/metadata", response_model=MetadataResponse, summary="The environment's metadata")
async def metadata(service: Service) -> MetadataResponse:
    info = service.info
    return MetadataResponse(name=info.name, description=info.description, version=info.version)


@router.get("/schema", response_model=SchemaResponse, summary="JSON Schemas of the env's data")
async def schema(service: Service) -> SchemaResponse:
    info = service.info
    return SchemaResponse(
        action=without_examples(info.action_model.model_json_schema()),
        observation=without_examples(info.observation_model.model_json_schema()),
        state=without_examples(info.state_model.model_json_schema()),
    )
