%% scp_aggregator: counts SCP exchanges and emits ready and per-second throughput.
%%
%% A gen_server registered as scp_aggregator, child of scp_head_sup. Servers
%% cast `exchange` once per completed ping/pong. After setup, scp_main calls
%% {setup_done, Pairs, WarmupMs, DurationS, Notify}: the aggregator emits
%% ready {what:"pairs", count}, fixes the window start T0 = now + warm-up on
%% the monotonic clock and returns T0 (the injector uses the same T0). At T0
%% it zeroes its count; at T0 + 1000*(k+1) ms it emits throughput
%% {second:k, count} for k = 0..duration_s-1, using absolute timers so ticks
%% do not drift; after the last one it sends {window_done, self()} to Notify.
-module(scp_aggregator).
-behaviour(gen_server).

-export([start_link/0]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

start_link() ->
    gen_server:start_link({local, ?MODULE}, ?MODULE, [], []).

init([]) ->
    {ok, #{count => 0, phase => setup}}.

handle_call({setup_done, Pairs, WarmupMs, DurationS, Notify}, _From, #{phase := setup} = S) ->
    troupe_events:emit(ready, [{what, <<"pairs">>}, {count, Pairs}]),
    T0 = erlang:monotonic_time(millisecond) + WarmupMs,
    erlang:start_timer(T0, self(), window_start, [{abs, true}]),
    {reply, {ok, T0}, S#{phase => warmup, t0 => T0, duration => DurationS, notify => Notify}};
handle_call(_Req, _From, S) ->
    {reply, {error, unknown_call}, S}.

handle_cast(exchange, #{count := C} = S) ->
    {noreply, S#{count := C + 1}};
handle_cast(_Msg, S) ->
    {noreply, S}.

handle_info({timeout, _, window_start}, #{t0 := T0} = S) ->
    erlang:start_timer(T0 + 1000, self(), {tick, 0}, [{abs, true}]),
    {noreply, S#{phase := window, count := 0}};
handle_info({timeout, _, {tick, K}}, #{t0 := T0, count := C, duration := D, notify := N} = S) ->
    troupe_events:emit(throughput, [{second, K}, {count, C}]),
    case K + 1 < D of
        true -> erlang:start_timer(T0 + 1000 * (K + 2), self(), {tick, K + 1}, [{abs, true}]);
        false -> N ! {window_done, self()}
    end,
    {noreply, S#{count := 0}};
handle_info(_Other, S) ->
    {noreply, S}.
