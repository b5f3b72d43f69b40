"""Where cdk-neuron's code meets other people's: the images it runs and the AMIs its nodes boot.

Plain Python (no ``aws_cdk``). Each contract records, with its public source (repository, path and
commit, or a dated page), what the other side does with what cdk-neuron gives it:

- :mod:`cdk_neuron.contracts.images`: every container image the library runs (the Neuron training
  DLC on AWS Batch; optimum-neuron, vLLM Neuron and TGI on EC2 and SageMaker): its ENTRYPOINT and
  CMD, how the entrypoint treats its arguments, the environment it reads, and the tools the
  launcher needs inside it. The tests run the exact command Batch, ``docker run`` or SageMaker
  would run through a reproduction of each entrypoint (``tests/image_entrypoints``).
- :mod:`cdk_neuron.contracts.ami`: every command a node program calls, and whether the AMI ships it
  (with the package list that says so) or a node program installs it over a route the nodes have.

``docs/image-and-ami-contracts.md`` is generated from both (``make contracts-doc``).
"""

from __future__ import annotations

__all__: list[str] = []
