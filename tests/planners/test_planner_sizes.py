"""Every size is checked before it is allocated (issue 33, class 7): a learning planner's network,
replay memory and minibatch are estimated from its options and refused in one line over the
memory a planner may take, instead of a traceback from the allocator or a machine swapping."""
from __future__ import annotations

import pytest

from extras import needs
from hetcc.core.errors import UsageError
from hetcc.core.limits import check_bytes, memory_limit_bytes

needs("learn", "gymnasium")


def test_the_limit_is_a_quarter_of_memory_and_nan_is_refused():
    assert memory_limit_bytes() > 0
    check_bytes(1024, "a small table", "nothing")
    for bad in (float("nan"), float("inf"), memory_limit_bytes() * 2.0):
        with pytest.raises(UsageError, match="a planner may use; lower it"):
            check_bytes(bad, "x", "lower it")


@pytest.mark.parametrize("option, needle", [({"width": 10**8}, "width="), ({"depth": 10**5}, "width="),
                                            ({"memory": 2 * 10**9}, "memory="), ({"batch_size": 10**9}, "batch_size=")])
def test_dqn_refuses_structures_that_do_not_fit(option, needle):
    from hetcc.planners.dqn import DQNOptions
    from hetcc.planners.dqn.agent import check_sizes

    with pytest.raises(UsageError, match=needle):
        check_sizes(DQNOptions(**option), 200, 40)
    check_sizes(DQNOptions(), 200, 40)          # Table II's sizes fit
