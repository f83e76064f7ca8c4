from django.contrib.auth import views as auth_views
from django.urls import path

from access import views

urlpatterns = [
    path("people/", views.people, name="people"),
    path("people/new", views.account_create, name="account-create"),
    path("people/upload", views.accounts_upload, name="accounts-upload"),
    path("people/<int:user_id>/role", views.account_role, name="account-role"),
    path("people/<int:user_id>/active", views.account_active, name="account-active"),
    path("people/<int:user_id>/password-link", views.account_password_link, name="account-password-link"),
    # Self-service: a forgotten password by e-mail, and the one-time links admins hand out.
    path("password-reset/", auth_views.PasswordResetView.as_view(), name="password_reset"),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(), name="password_reset_confirm"),
    path("reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
]
