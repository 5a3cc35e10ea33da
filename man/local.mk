dist_man_MANS += \
	man/ohbox.1 \
	man/ohbox-runc.1 \
	man/ohbox-pull.1 \
	man/ohbox-images.1 \
	man/ohbox-inspect.1 \
	man/ohbox-rmi.1 \
	man/ohbox-prune.1 \
	man/ohbox-load.1 \
	man/ohbox-save.1 \
	man/ohbox-login.1 \
	man/ohbox-logout.1 \
	man/ohbox-run.1 \
	man/ohbox-ps.1 \
	man/ohbox-stop.1 \
	man/ohbox-kill.1 \
	man/ohbox-rm.1 \
	man/ohbox-pause.1 \
	man/ohbox-unpause.1 \
	man/ohbox-wait.1 \
	man/ohbox-logs.1 \
	man/ohbox-stats.1 \
	man/ohbox-port.1 \
	man/ohbox-network.1 \
	man/ohbox-build.1 \
	man/ohbox-push.1
dist_man_MANS += man/ohbox-exec.1
dist_man_MANS += man/ohbox-action.1 man/libohbox.3
dist_man_MANS += man/ohbox-ci.1
dist_man_MANS += man/ohbox-attach.1
dist_man_MANS += man/ohbox-check.1
dist_man_MANS += man/ohbox-serve.1
dist_man_MANS += man/ohbox-executor.8
