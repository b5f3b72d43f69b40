"""This app's stacks. They compose cdk_neuron constructs per environment; they hold no hardware facts."""
