%% troupe_stats: the statistics every Erlang benchmark driver shares (the micro
%% and distribution benchmarks report the median of their measured repetitions).
-module(troupe_stats).

-export([median/1]).

%% The median of a non-empty list of numbers (the mean of the middle two for an even count).
median(Xs) ->
    S = lists:sort(Xs),
    L = length(S),
    case L rem 2 of
        1 -> lists:nth(L div 2 + 1, S);
        0 -> (lists:nth(L div 2, S) + lists:nth(L div 2 + 1, S)) / 2
    end.
