defmodule TroupeChat.MixProject do
  use Mix.Project

  # The Elixir peer of the Troupe lab's chat benchmark (docs/chat.md, "The chat peer contract").
  # No dependencies: Hex is not reachable where the lab runs, so only Elixir's and OTP's own
  # libraries are used (JSON is TroupeChat.JSON).
  def project do
    [
      app: :troupe_chat,
      version: "0.1.0",
      elixir: "~> 1.14",
      start_permanent: false,
      deps: []
    ]
  end

  def application do
    [extra_applications: [:logger]]
  end
end
