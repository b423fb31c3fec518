defmodule TroupeChat.JSON do
  @moduledoc """
  A small, complete JSON (RFC 8259) decoder and encoder: OTP 25 has no JSON module (OTP 27's
  `:json` came later) and Hex packages such as Jason cannot be fetched here.

  Decoding: objects become maps with string keys, arrays lists, strings UTF-8 binaries (every
  escape, `\\uXXXX` surrogate pairs included), numbers integers or floats, `true`/`false`/`null`
  the atoms `true`/`false`/`nil`. Anything else (trailing garbage, control characters in strings,
  lone surrogates, leading zeros, ...) is `{:error, reason}`.

  Encoding: maps (string or atom keys), lists, binaries, integers, floats, `true`/`false`/`nil`
  and other atoms (as strings) to compact JSON iodata. Strings are escaped: `"` `\\`, the
  control characters below 0x20 (the short escapes where JSON has one, else `\\u00XX`), and
  U+2028/U+2029; other UTF-8 passes through unchanged.
  """

  # ------------------------------------------------------------------------------------------
  # Decoding

  @doc "Decodes one JSON text: `{:ok, term}` or `{:error, reason}`."
  @spec decode(binary) :: {:ok, term} | {:error, String.t()}
  def decode(text) when is_binary(text) do
    {value, rest} = value(skip_ws(text))

    case skip_ws(rest) do
      "" -> {:ok, value}
      other -> {:error, "unexpected trailing data at: " <> snippet(other)}
    end
  catch
    {:json_error, reason} -> {:error, reason}
  end

  @doc "Like `decode/1`, raising `ArgumentError` on invalid JSON."
  def decode!(text) do
    case decode(text) do
      {:ok, v} -> v
      {:error, reason} -> raise ArgumentError, "invalid JSON: " <> reason
    end
  end

  defp fail(reason), do: throw({:json_error, reason})
  defp snippet(rest), do: inspect(binary_part(rest, 0, min(byte_size(rest), 20)))

  defp skip_ws(<<c, rest::binary>>) when c in [?\s, ?\t, ?\n, ?\r], do: skip_ws(rest)
  defp skip_ws(rest), do: rest

  defp value(<<?{, rest::binary>>), do: object(skip_ws(rest), %{})
  defp value(<<?[, rest::binary>>), do: array(skip_ws(rest), [])
  defp value(<<?", rest::binary>>), do: str(rest, [])
  defp value(<<"true", rest::binary>>), do: {true, rest}
  defp value(<<"false", rest::binary>>), do: {false, rest}
  defp value(<<"null", rest::binary>>), do: {nil, rest}
  defp value(<<c, _::binary>> = text) when c == ?- or c in ?0..?9, do: number(text)
  defp value(""), do: fail("unexpected end of input")
  defp value(other), do: fail("unexpected character at: " <> snippet(other))

  defp object(<<?}, rest::binary>>, acc) when acc == %{}, do: {acc, rest}

  defp object(<<?", rest::binary>>, acc) do
    {key, rest} = str(rest, [])

    case skip_ws(rest) do
      <<?:, rest::binary>> ->
        {v, rest} = value(skip_ws(rest))
        acc = Map.put(acc, key, v)

        case skip_ws(rest) do
          <<?,, rest::binary>> -> object(skip_ws(rest), acc)
          <<?}, rest::binary>> -> {acc, rest}
          other -> fail("expected ',' or '}' in an object at: " <> snippet(other))
        end

      other ->
        fail("expected ':' after an object key at: " <> snippet(other))
    end
  end

  defp object(other, _), do: fail("expected a string key in an object at: " <> snippet(other))

  defp array(<<?], rest::binary>>, []), do: {[], rest}

  defp array(text, acc) do
    {v, rest} = value(text)

    case skip_ws(rest) do
      <<?,, rest::binary>> -> array(skip_ws(rest), [v | acc])
      <<?], rest::binary>> -> {Enum.reverse([v | acc]), rest}
      other -> fail("expected ',' or ']' in an array at: " <> snippet(other))
    end
  end

  # Strings: runs of plain bytes are taken whole; escapes one at a time.
  defp str(text, acc) do
    case plain_run(text, 0) do
      {n, <<?", rest::binary>>} ->
        {IO.iodata_to_binary([acc | binary_part(text, 0, n)]) |> valid_utf8!(), rest}

      {n, <<?\\, rest::binary>>} ->
        {ch, rest} = escape(rest)
        str(rest, [acc, binary_part(text, 0, n) | ch])

      {_, ""} ->
        fail("unterminated string")

      {_, <<c, _::binary>>} ->
        fail("control character #{c} in a string")
    end
  end

  defp plain_run(text, n) do
    case text do
      <<_::binary-size(n), c, _::binary>> when c != ?" and c != ?\\ and c >= 0x20 ->
        plain_run(text, n + 1)

      <<_::binary-size(n), rest::binary>> ->
        {n, rest}
    end
  end

  defp valid_utf8!(s), do: if(String.valid?(s), do: s, else: fail("invalid UTF-8 in a string"))

  defp escape(<<?", r::binary>>), do: {"\"", r}
  defp escape(<<?\\, r::binary>>), do: {"\\", r}
  defp escape(<<?/, r::binary>>), do: {"/", r}
  defp escape(<<?b, r::binary>>), do: {"\b", r}
  defp escape(<<?f, r::binary>>), do: {"\f", r}
  defp escape(<<?n, r::binary>>), do: {"\n", r}
  defp escape(<<?r, r::binary>>), do: {"\r", r}
  defp escape(<<?t, r::binary>>), do: {"\t", r}

  defp escape(<<?u, h::binary-size(4), r::binary>>) do
    case hex4(h) do
      hi when hi in 0xD800..0xDBFF ->
        case r do
          <<?\\, ?u, l::binary-size(4), r2::binary>> ->
            case hex4(l) do
              lo when lo in 0xDC00..0xDFFF ->
                {<<0x10000 + (hi - 0xD800) * 0x400 + (lo - 0xDC00)::utf8>>, r2}

              _ ->
                fail("a high surrogate not followed by a low one")
            end

          _ ->
            fail("a lone high surrogate")
        end

      lo when lo in 0xDC00..0xDFFF ->
        fail("a lone low surrogate")

      cp ->
        {<<cp::utf8>>, r}
    end
  end

  defp escape(other), do: fail("invalid escape at: " <> snippet(other))

  defp hex4(<<a, b, c, d>> = h) do
    if Enum.all?([a, b, c, d], &(&1 in ?0..?9 or &1 in ?a..?f or &1 in ?A..?F)),
      do: String.to_integer(h, 16),
      else: fail("bad \\u escape: " <> inspect(h))
  end

  # Numbers: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  defp number(text) do
    {neg, r} = take_sign(text)
    {int, r} = int_part(r)
    {frac, r} = frac_part(r)
    {exp, r} = exp_part(r)
    n = byte_size(text) - byte_size(r)
    literal = binary_part(text, 0, n)

    value =
      if frac == "" and exp == "" do
        String.to_integer(literal)
      else
        # Erlang's float parser wants digits on both sides of the point.
        mantissa = neg <> int <> "." <> if(frac == "", do: "0", else: frac)
        String.to_float(mantissa <> if(exp == "", do: "", else: "e" <> exp))
      end

    {value, r}
  rescue
    ArgumentError -> fail("number out of range")
  end

  defp take_sign(<<?-, r::binary>>), do: {"-", r}
  defp take_sign(r), do: {"", r}

  defp int_part(<<?0, d, _::binary>>) when d in ?0..?9, do: fail("a number with a leading zero")
  defp int_part(<<?0, r::binary>>), do: {"0", r}
  defp int_part(<<d, _::binary>> = r) when d in ?1..?9, do: digits(r)
  defp int_part(r), do: fail("expected a digit at: " <> snippet(r))

  defp frac_part(<<?., d, _::binary>> = r) when d in ?0..?9 do
    <<?., r::binary>> = r
    digits(r)
  end

  defp frac_part(<<?., r::binary>>), do: fail("expected a digit after '.' at: " <> snippet(r))
  defp frac_part(r), do: {"", r}

  defp exp_part(<<e, r::binary>>) when e in [?e, ?E] do
    {sign, r} =
      case r do
        <<s, r2::binary>> when s in [?+, ?-] -> {<<s>>, r2}
        _ -> {"", r}
      end

    case r do
      <<d, _::binary>> when d in ?0..?9 ->
        {ds, r} = digits(r)
        {sign <> ds, r}

      _ ->
        fail("expected a digit in an exponent at: " <> snippet(r))
    end
  end

  defp exp_part(r), do: {"", r}

  defp digits(text) do
    n = count_digits(text, 0)
    <<ds::binary-size(n), rest::binary>> = text
    {ds, rest}
  end

  defp count_digits(text, n) do
    case text do
      <<_::binary-size(n), d, _::binary>> when d in ?0..?9 -> count_digits(text, n + 1)
      _ -> n
    end
  end

  # ------------------------------------------------------------------------------------------
  # Encoding

  @doc "Encodes a term to compact JSON iodata (see the module doc for what it takes)."
  @spec encode(term) :: iodata
  def encode(nil), do: "null"
  def encode(true), do: "true"
  def encode(false), do: "false"
  def encode(a) when is_atom(a), do: string(Atom.to_string(a))
  def encode(s) when is_binary(s), do: string(s)
  def encode(i) when is_integer(i), do: Integer.to_string(i)
  def encode(f) when is_float(f), do: float(f)
  def encode(list) when is_list(list), do: [?[, Enum.map_intersperse(list, ?,, &encode/1), ?]]

  def encode(map) when is_map(map) do
    pairs =
      map
      |> Enum.map(fn {k, v} -> {key(k), v} end)
      |> Enum.sort()
      |> Enum.map_intersperse(?,, fn {k, v} -> [string(k), ?:, encode(v)] end)

    [?{, pairs, ?}]
  end

  def encode(other), do: raise(ArgumentError, "cannot encode #{inspect(other)} as JSON")

  @doc "Encodes to a binary."
  def encode_to_binary(term), do: IO.iodata_to_binary(encode(term))

  defp key(k) when is_binary(k), do: k
  defp key(k) when is_atom(k), do: Atom.to_string(k)
  defp key(k), do: raise(ArgumentError, "cannot encode #{inspect(k)} as a JSON object key")

  # Shortest round-trip form; JSON has no NaN or infinity (BEAM floats have neither).
  defp float(f), do: :erlang.float_to_binary(f, [:short])

  @doc "A JSON string literal (quoted and escaped) as iodata."
  @spec string(binary) :: iodata
  def string(s) when is_binary(s), do: [?", escape_string(s, s, 0, 0, []), ?"]

  # Walks the binary, copying runs that need no escape as sub-binaries.
  defp escape_string(<<>>, orig, start, len, acc), do: [acc | binary_part(orig, start, len)]

  defp escape_string(<<c, rest::binary>>, orig, start, len, acc) when c < 0x20 or c == ?" or c == ?\\ do
    acc = [acc, binary_part(orig, start, len) | escape_char(c)]
    escape_string(rest, orig, start + len + 1, 0, acc)
  end

  defp escape_string(<<0xE2, 0x80, c, rest::binary>>, orig, start, len, acc) when c in [0xA8, 0xA9] do
    acc = [acc, binary_part(orig, start, len) | if(c == 0xA8, do: "\\u2028", else: "\\u2029")]
    escape_string(rest, orig, start + len + 3, 0, acc)
  end

  defp escape_string(<<_, rest::binary>>, orig, start, len, acc),
    do: escape_string(rest, orig, start, len + 1, acc)

  defp escape_char(?"), do: "\\\""
  defp escape_char(?\\), do: "\\\\"
  defp escape_char(?\n), do: "\\n"
  defp escape_char(?\r), do: "\\r"
  defp escape_char(?\t), do: "\\t"
  defp escape_char(?\b), do: "\\b"
  defp escape_char(?\f), do: "\\f"

  defp escape_char(c) do
    hex = Integer.to_string(c, 16)
    ["\\u", String.duplicate("0", 4 - byte_size(hex)), hex]
  end
end
