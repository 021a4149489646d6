"""The hostile corpus (issue 24): real loopback peers (registries, token services, API servers) that redirect,
stall, lie and ask for credentials; spec values written to steer the CI runner, commit trailers and Markdown;
real signals at every step of a sync. Every case asserts the exit code, the message, that nothing leaked,
that nothing unexpected was contacted, and that the repository is consistent."""
