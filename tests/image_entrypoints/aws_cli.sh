#!/bin/bash
# Reproduction of the AWS CLI v2 image's entrypoint (aws/aws-cli @1c30287a, docker/Dockerfile:
# ENTRYPOINT ["/usr/local/bin/aws"]): the container's arguments go to the CLI, as given.
exec aws "$@"
