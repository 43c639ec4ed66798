"""Integration tests: the clusters classes share (``ClusterCase.SHARED``) are destroyed
once the module's tests are done."""

import pytest

from tests.integration.clustercase import release_shared


@pytest.fixture(autouse=True, scope="module")
def _shared_clusters(request):
    yield
    release_shared(request.module.__name__)
