"""``python -m cdk_neuron.cli``: the ``cdk-neuron`` command, where the console script is not on PATH."""

import sys

from cdk_neuron.cli.main import main

sys.exit(main())
