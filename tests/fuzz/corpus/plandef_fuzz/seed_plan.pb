
plan
init
xy"Relu:x(
step
yy"Abs
y
ystop"LT:y$
report
ytotal"SumElements:y
initinit3
train
loopstep 
alsostep 0:report@
untilstepJstopP
	instances
copyreport`h,
periodic
workinit 
tickreportX