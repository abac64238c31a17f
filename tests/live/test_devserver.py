from temporalio.testing import WorkflowEnvironment

from scope_temporal.names import DEFINITION_ATTRIBUTE


async def test_dev_server_starts_with_search_attributes(temporal_env: WorkflowEnvironment) -> None:
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest

    resp = await temporal_env.client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=temporal_env.client.namespace)
    )
    assert DEFINITION_ATTRIBUTE.name in resp.custom_attributes
