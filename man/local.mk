dist_man_MANS += \
	man/ohbox.1 \
	man/ohbox-pull.1 \
	man/ohbox-images.1 \
	man/ohbox-inspect.1 \
	man/ohbox-rmi.1 \
	man/ohbox-prune.1 \
	man/ohbox-load.1 \
	man/ohbox-save.1 \
	man/ohbox-login.1 \
	man/ohbox-logout.1
