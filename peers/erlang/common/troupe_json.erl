%% troupe_json: the small JSON encoder and parser the Erlang peers need.
%%
%% OTP 25 ships no json module and the peers must build with erlc alone (no
%% rebar, no hex downloads), so this file owns the two directions we use:
%% encoding our event/result lines (flat objects, plus the config object
%% nested once in run_started) and parsing the lab's inputs (the SCP config
%% object and the schedule.jsonl lines).
%%
%% Term mapping (EEP-18 style, as jiffy uses):
%%   object  <-> {[{Key :: binary(), Value}]}   (member order preserved)
%%   array   <-> [Value]
%%   string  <-> binary() (UTF-8)
%%   number  <-> integer() | float()
%%   true | false | null <-> the atoms true | false | null
%% For encoding, object keys may also be atoms, and strings may be given as
%% atoms other than true/false/null.
-module(troupe_json).

-export([encode/1, encode_fields/1, decode/1, get/2, get/3, read_file/1]).

%%--------------------------------------------------------------------
%% Encoding
%%--------------------------------------------------------------------

%% encode(Term) -> iodata().
encode({Members}) when is_list(Members) ->
    [${, encode_members(Members), $}];
encode(L) when is_list(L) ->
    [$[, join([encode(V) || V <- L]), $]];
encode(true) -> <<"true">>;
encode(false) -> <<"false">>;
encode(null) -> <<"null">>;
encode(I) when is_integer(I) -> integer_to_binary(I);
encode(F) when is_float(F) -> float_to_binary(F, [short]);
encode(B) when is_binary(B) -> encode_string(B);
encode(A) when is_atom(A) -> encode_string(atom_to_binary(A, utf8)).

%% encode_fields([{K, V}]) -> iodata() of ',"k":v' for each member, to append
%% members to an object whose opening part the caller already wrote.
encode_fields(Members) ->
    [[$,, encode_key(K), $:, encode(V)] || {K, V} <- Members].

encode_members(Members) ->
    join([[encode_key(K), $:, encode(V)] || {K, V} <- Members]).

encode_key(K) when is_atom(K) -> encode_string(atom_to_binary(K, utf8));
encode_key(K) when is_binary(K) -> encode_string(K).

join([]) -> [];
join([H | T]) -> [H | [[$, | X] || X <- T]].

encode_string(B) ->
    [$", escape(B, <<>>), $"].

escape(<<>>, Acc) -> Acc;
escape(<<$", R/binary>>, Acc) -> escape(R, <<Acc/binary, "\\\"">>);
escape(<<$\\, R/binary>>, Acc) -> escape(R, <<Acc/binary, "\\\\">>);
escape(<<$\n, R/binary>>, Acc) -> escape(R, <<Acc/binary, "\\n">>);
escape(<<$\r, R/binary>>, Acc) -> escape(R, <<Acc/binary, "\\r">>);
escape(<<$\t, R/binary>>, Acc) -> escape(R, <<Acc/binary, "\\t">>);
escape(<<C, R/binary>>, Acc) when C < 16#20 ->
    Hex = iolist_to_binary(io_lib:format("\\u~4.16.0b", [C])),
    escape(R, <<Acc/binary, Hex/binary>>);
escape(<<C, R/binary>>, Acc) -> escape(R, <<Acc/binary, C>>).

%%--------------------------------------------------------------------
%% Parsing
%%--------------------------------------------------------------------

%% decode(Binary) -> {ok, Term} | {error, Reason :: string()}.
%% The whole input must be one JSON value (surrounding whitespace allowed).
decode(Bin) when is_binary(Bin) ->
    try
        {V, Rest} = value(ws(Bin)),
        case ws(Rest) of
            <<>> -> {ok, V};
            <<C, _/binary>> -> {error, io_lib:format("trailing data starting with '~c'", [C])}
        end
    catch
        throw:{json, Why} -> {error, Why}
    end.

%% get(Key, Object) -> Value | undefined; get(Key, Object, Default).
get(Key, Obj) -> get(Key, Obj, undefined).
get(Key, {Members}, Default) when is_binary(Key) ->
    case lists:keyfind(Key, 1, Members) of
        {_, V} -> V;
        false -> Default
    end;
get(Key, Obj, Default) when is_atom(Key) ->
    get(atom_to_binary(Key, utf8), Obj, Default).

fail(Fmt, Args) -> throw({json, lists:flatten(io_lib:format(Fmt, Args))}).

ws(<<C, R/binary>>) when C =:= $\s; C =:= $\t; C =:= $\n; C =:= $\r -> ws(R);
ws(B) -> B.

value(<<${, R/binary>>) -> object(ws(R), []);
value(<<$[, R/binary>>) -> array(ws(R), []);
value(<<$", R/binary>>) -> string(R, <<>>);
value(<<"true", R/binary>>) -> {true, R};
value(<<"false", R/binary>>) -> {false, R};
value(<<"null", R/binary>>) -> {null, R};
value(<<C, _/binary>> = B) when C =:= $-; C >= $0, C =< $9 -> number(B);
value(<<>>) -> fail("unexpected end of input", []);
value(<<C, _/binary>>) -> fail("unexpected character '~c'", [C]).

object(<<$}, R/binary>>, []) -> {{[]}, R};
object(<<$", R/binary>>, Acc) ->
    {K, R1} = string(R, <<>>),
    case ws(R1) of
        <<$:, R2/binary>> ->
            {V, R3} = value(ws(R2)),
            Acc1 = [{K, V} | Acc],
            case ws(R3) of
                <<$,, R4/binary>> -> object(ws(R4), Acc1);
                <<$}, R4/binary>> -> {{lists:reverse(Acc1)}, R4};
                _ -> fail("expected ',' or '}' in object after key \"~ts\"", [K])
            end;
        _ -> fail("expected ':' after object key \"~ts\"", [K])
    end;
object(_, _) -> fail("expected a string key in object", []).

array(<<$], R/binary>>, []) -> {[], R};
array(B, Acc) ->
    {V, R1} = value(B),
    case ws(R1) of
        <<$,, R2/binary>> -> array(ws(R2), [V | Acc]);
        <<$], R2/binary>> -> {lists:reverse([V | Acc]), R2};
        _ -> fail("expected ',' or ']' in array", [])
    end.

string(<<$", R/binary>>, Acc) -> {Acc, R};
string(<<$\\, E, R/binary>>, Acc) ->
    case E of
        $" -> string(R, <<Acc/binary, $">>);
        $\\ -> string(R, <<Acc/binary, $\\>>);
        $/ -> string(R, <<Acc/binary, $/>>);
        $b -> string(R, <<Acc/binary, $\b>>);
        $f -> string(R, <<Acc/binary, $\f>>);
        $n -> string(R, <<Acc/binary, $\n>>);
        $r -> string(R, <<Acc/binary, $\r>>);
        $t -> string(R, <<Acc/binary, $\t>>);
        $u -> unicode_escape(R, Acc);
        _ -> fail("bad escape '\\~c' in string", [E])
    end;
string(<<C, _/binary>>, _) when C < 16#20 -> fail("control character in string", []);
string(<<C, R/binary>>, Acc) -> string(R, <<Acc/binary, C>>);
string(<<>>, _) -> fail("unterminated string", []).

unicode_escape(<<H:4/binary, R/binary>>, Acc) ->
    Cp = hex4(H),
    if
        Cp >= 16#D800, Cp =< 16#DBFF ->
            case R of
                <<"\\u", L:4/binary, R2/binary>> ->
                    Lo = hex4(L),
                    (Lo >= 16#DC00 andalso Lo =< 16#DFFF) orelse fail("bad surrogate pair", []),
                    Full = 16#10000 + ((Cp - 16#D800) bsl 10) + (Lo - 16#DC00),
                    string(R2, <<Acc/binary, Full/utf8>>);
                _ -> fail("lone high surrogate", [])
            end;
        Cp >= 16#DC00, Cp =< 16#DFFF -> fail("lone low surrogate", []);
        true -> string(R, <<Acc/binary, Cp/utf8>>)
    end;
unicode_escape(_, _) -> fail("short \\u escape", []).

hex4(H) ->
    try binary_to_integer(H, 16)
    catch error:badarg -> fail("bad \\u escape '~s'", [H])
    end.

%% number: -? int frac? exp?  -> integer when neither frac nor exp present.
number(B) ->
    {Sign, R0} = case B of
                     <<$-, R/binary>> -> {<<"-">>, R};
                     _ -> {<<>>, B}
                 end,
    {Int, R1} = digits(R0, <<>>),
    Int =:= <<>> andalso fail("expected digits in number", []),
    {Frac, R2} = case R1 of
                     <<$., RF/binary>> ->
                         {F, RF2} = digits(RF, <<>>),
                         F =:= <<>> andalso fail("expected digits after '.'", []),
                         {F, RF2};
                     _ -> {none, R1}
                 end,
    {Exp, R3} = case R2 of
                    <<E, RE/binary>> when E =:= $e; E =:= $E ->
                        {ES, RE1} = case RE of
                                        <<$+, X/binary>> -> {<<>>, X};
                                        <<$-, X/binary>> -> {<<"-">>, X};
                                        _ -> {<<>>, RE}
                                    end,
                        {ED, RE2} = digits(RE1, <<>>),
                        ED =:= <<>> andalso fail("expected digits in exponent", []),
                        {<<ES/binary, ED/binary>>, RE2};
                    _ -> {none, R2}
                end,
    case {Frac, Exp} of
        {none, none} -> {binary_to_integer(<<Sign/binary, Int/binary>>), R3};
        _ ->
            F1 = case Frac of none -> <<"0">>; _ -> Frac end,
            E1 = case Exp of none -> <<>>; _ -> <<"e", Exp/binary>> end,
            {binary_to_float(<<Sign/binary, Int/binary, ".", F1/binary, E1/binary>>), R3}
    end.

digits(<<C, R/binary>>, Acc) when C >= $0, C =< $9 -> digits(R, <<Acc/binary, C>>);
digits(R, Acc) -> {Acc, R}.

%% Reads and decodes the JSON file at Path (a lab config): {ok, Value} or
%% {error, Text} naming the file and what was wrong.
read_file(Path) ->
    case file:read_file(Path) of
        {ok, Bin} ->
            case decode(Bin) of
                {ok, V} -> {ok, V};
                {error, Why} -> {error, lists:flatten(io_lib:format("~ts: bad JSON: ~s", [Path, Why]))}
            end;
        {error, Why} ->
            {error, lists:flatten(io_lib:format("cannot read config ~ts: ~p", [Path, Why]))}
    end.
