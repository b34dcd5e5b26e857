from .models import role_of


def role(request):
    r = role_of(request.user) if hasattr(request, "user") else None
    return {"user_role": r, "is_steward": r == "steward"}
