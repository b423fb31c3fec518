defmodule TroupeChat.MixProject do
  use Mix.Project

  # The Elixir peer of the Troupe lab's chat benchmark (docs/chat.md, "The chat peer contract").
  # No dependencies: Hex is not reachable where the lab runs, so only Elixir's and OTP's own
  # libraries are used (JSON is TroupeChat.JSON). The `amqp://` event transport uses the Erlang
  # peers' own AMQP 0-9-1 publisher (`:troupe_amqp`), compiled in from erlc_paths.
  def project do
    [
      app: :troupe_chat,
      version: "0.1.0",
      elixir: "~> 1.14",
      start_permanent: false,
      erlc_paths: ["../../erlang/common/amqp"],
      deps: []
    ]
  end

  def application do
    [extra_applications: [:logger]]
  end
end
