#!/bin/bash
# Reproduction of the AWS CLI v2 image's entrypoint (aws/aws-cli @64bd0550, tag 2.22.35,
# docker/Dockerfile: `ENTRYPOINT ["/usr/local/bin/aws"]`): every argument goes to the CLI as is.
exec aws "$@"
