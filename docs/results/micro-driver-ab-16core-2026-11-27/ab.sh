#!/bin/bash
# A/B of the micro driver change on the device: old and new binaries at the same time on
# disjoint cores (old on 0-3, new on 4-7), --scaling 1,2, Savina set, four Rust runtimes.
set -u
cd target/devbin
xz -d -k -f old.xz new.xz
chmod +x old new
nproc; uptime; lscpu | grep -E "Model name|^CPU\(s\)"
B=pingpong,count,threadring,fjthrput,fjcreate,chameneos,big,fib,skynet
( taskset -c 0-3 ./old lab micro --scaling 1,2 --only $B --runtimes troupe,actix,ractor,kameo --reps 3 --out $OUT/old > $OUT/old.txt 2>&1; echo "old rc=$?" >> $OUT/old.txt ) &
( taskset -c 4-7 ./new lab micro --scaling 1,2 --only $B --runtimes troupe,actix,ractor,kameo --reps 3 --out $OUT/new > $OUT/new.txt 2>&1; echo "new rc=$?" >> $OUT/new.txt ) &
wait
uptime
cd $OUT && tar czf both.tgz old new && rm -rf old new
ls -la $OUT
tail -40 $OUT/new.txt
